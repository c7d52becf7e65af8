package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Script is one parsed Lua script.
type Script struct {
	File    string // e.g. "begin.lua"
	Name    string // e.g. "begin"
	Summary string // first paragraph of the header
	Keys    []Param
	Args    []Param
	Returns []string // RETURNS block, verbatim
	Shapes  []Shape  // the reply shapes RETURNS declares, in order
	// Retryable is true when the header says "RETRY safe": running the script
	// twice for one call has the effect of running it once, so the client may
	// resend it when a reply is lost. "RETRY unsafe" scripts are sent once.
	Retryable bool
}

// Shape is one reply a RETURNS declaration allows: an array whose first
// element is one of Outcomes and whose other elements are Fields, in order.
type Shape struct {
	Outcomes []string // literal first elements, e.g. "OK", "EXISTS"
	Fields   []Field
}

// Field is one element of a reply after the outcome.
type Field struct {
	Name string // snake_case
	Type string // string, int or bytes
}

// Param is one KEYS[i] or ARGV[i] of a header.
type Param struct {
	Index int
	Name  string // snake_case name from the header
	Type  string // ARGV only: string, bytes or int
	Doc   string
}

var (
	retryLine = regexp.MustCompile(`^RETRY\s+(safe|unsafe)\b`)
	keyLine   = regexp.MustCompile(`^KEYS\[(\d+)\]\s+([a-z][a-z0-9_]*)\s*(.*)$`)
	argLine   = regexp.MustCompile(`^ARGV\[(\d+)\]\s+([a-z][a-z0-9_]*)\s+(string|bytes|int)\b\s*(.*)$`)
	nameRe    = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	callRe    = regexp.MustCompile(`redis\.p?call\s*\(`)
	keysRefRe = regexp.MustCompile(`KEYS\s*\[\s*([^\]]*)\]`)
	aliasRe   = regexp.MustCompile(`local\s+([A-Za-z_][A-Za-z0-9_]*)\s*=\s*KEYS\[(\d+)\]\s*$`)
	outcomeRe = regexp.MustCompile(`^"([A-Z][A-Z0-9_]*)"$`)
	fieldRe   = regexp.MustCompile(`^([a-z][a-z0-9_]*)\s+(string|int|bytes)$`)
)

// Commands that take no key: any other command's first argument must be a key.
var keyless = map[string]bool{"TIME": true, "PING": true, "ECHO": true}

// Commands whose every argument is a key.
var allKeys = map[string]bool{"DEL": true, "UNLINK": true, "EXISTS": true, "TOUCH": true}

// Commands that take keys in other positions; refused rather than half-checked.
var refused = map[string]bool{
	"EVAL": true, "EVALSHA": true, "FCALL": true, "KEYS": true, "SCAN": true, "MGET": true, "MSET": true,
	"MSETNX": true, "RENAME": true, "RENAMENX": true, "COPY": true, "SMOVE": true, "LMOVE": true,
	"RPOPLPUSH": true, "SUNIONSTORE": true, "SINTERSTORE": true, "SDIFFSTORE": true, "ZUNIONSTORE": true,
	"ZINTERSTORE": true, "ZDIFFSTORE": true, "BLMOVE": true, "BRPOPLPUSH": true, "OBJECT": true,
	"SORT": true, "MIGRATE": true, "FLUSHALL": true, "FLUSHDB": true, "SELECT": true,
}

// Parse reads a script's header and checks its body's key use.
func Parse(file, src string) (*Script, error) {
	s := &Script{File: file, Name: strings.TrimSuffix(file, ".lua")}
	if !nameRe.MatchString(s.Name) {
		return nil, fmt.Errorf("%s: script name must be snake_case", file)
	}
	lines := strings.Split(src, "\n")
	inReturns, inSummary, hasRetry := false, true, false
	body := 0
	for i, raw := range lines {
		line := strings.TrimSpace(raw)
		if !strings.HasPrefix(line, "--") {
			body = i
			break
		}
		text := strings.TrimSpace(strings.TrimPrefix(line, "--"))
		switch {
		case inSummary && text != "":
			if s.Summary == "" {
				text = strings.TrimSpace(strings.TrimPrefix(text, s.Name+":"))
			} else {
				text = " " + text
			}
			s.Summary += text
		case inSummary:
			inSummary = false
		case strings.HasPrefix(text, "KEYS["):
			m := keyLine.FindStringSubmatch(text)
			if m == nil {
				return nil, fmt.Errorf("%s:%d: malformed KEYS line %q", file, i+1, text)
			}
			n, _ := strconv.Atoi(m[1])
			s.Keys = append(s.Keys, Param{Index: n, Name: m[2], Doc: m[3]})
			inReturns = false
		case strings.HasPrefix(text, "ARGV["):
			m := argLine.FindStringSubmatch(text)
			if m == nil {
				return nil, fmt.Errorf("%s:%d: malformed ARGV line %q (want: ARGV[n] name string|bytes|int doc)", file, i+1, text)
			}
			n, _ := strconv.Atoi(m[1])
			s.Args = append(s.Args, Param{Index: n, Name: m[2], Type: m[3], Doc: m[4]})
			inReturns = false
		case strings.HasPrefix(text, "RETRY "):
			m := retryLine.FindStringSubmatch(text)
			if m == nil {
				return nil, fmt.Errorf("%s:%d: malformed RETRY line %q (want: RETRY safe|unsafe reason)", file, i+1, text)
			}
			s.Retryable, hasRetry = m[1] == "safe", true
			inReturns = false
		case strings.HasPrefix(text, "RETURNS"):
			inReturns = true
			s.Returns = append(s.Returns, text)
			if err := s.parseShapes(strings.TrimSpace(strings.TrimPrefix(text, "RETURNS"))); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", file, i+1, err)
			}
		case inReturns && text != "":
			s.Returns = append(s.Returns, text)
			if err := s.parseShapes(text); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", file, i+1, err)
			}
		}
	}
	if len(s.Keys) == 0 {
		return nil, fmt.Errorf("%s: header declares no KEYS", file)
	}
	if len(s.Returns) == 0 {
		return nil, fmt.Errorf("%s: header has no RETURNS", file)
	}
	if len(s.Shapes) == 0 {
		return nil, fmt.Errorf("%s: RETURNS declares no reply shape (want {\"OUTCOME\", name type, ...})", file)
	}
	if err := checkShapes(s.Shapes); err != nil {
		return nil, fmt.Errorf("%s: RETURNS: %v", file, err)
	}
	if !hasRetry {
		return nil, fmt.Errorf("%s: header must say RETRY safe or RETRY unsafe", file)
	}
	if err := checkSequence(file, "KEYS", s.Keys); err != nil {
		return nil, err
	}
	if err := checkSequence(file, "ARGV", s.Args); err != nil {
		return nil, err
	}
	if err := checkBody(file, lines, body, len(s.Keys)); err != nil {
		return nil, err
	}
	return s, nil
}

func checkSequence(file, what string, ps []Param) error {
	seen := map[string]bool{}
	for i, p := range ps {
		if p.Index != i+1 {
			return fmt.Errorf("%s: %s must be numbered 1..n in order (found %s[%d] at position %d)", file, what, what, p.Index, i+1)
		}
		if seen[p.Name] {
			return fmt.Errorf("%s: %s name %q declared twice", file, what, p.Name)
		}
		seen[p.Name] = true
	}
	return nil
}

// checkBody verifies that every key a redis.call reaches is a declared KEYS[i]
// (or a local alias of one), and that KEYS is indexed only by declared literals.
func checkBody(file string, lines []string, from, nkeys int) error {
	aliases := map[string]bool{}
	code := make([]string, len(lines))
	for i, l := range lines {
		if j := strings.Index(l, "--"); j >= 0 {
			l = l[:j] // Lua line comment; our scripts keep no "--" inside strings
		}
		code[i] = l
	}
	for i := from; i < len(code); i++ {
		for _, m := range keysRefRe.FindAllStringSubmatch(code[i], -1) {
			n, err := strconv.Atoi(strings.TrimSpace(m[1]))
			if err != nil || n < 1 || n > nkeys {
				return fmt.Errorf("%s:%d: KEYS[%s] is not a declared key (declared 1..%d)", file, i+1, m[1], nkeys)
			}
		}
		if m := aliasRe.FindStringSubmatch(strings.TrimSpace(code[i])); m != nil {
			aliases[m[1]] = true
		}
	}
	text := strings.Join(code[from:], "\n")
	lineOf := func(off int) int { return from + strings.Count(text[:off], "\n") + 1 }
	for _, loc := range callRe.FindAllStringIndex(text, -1) {
		args, err := splitArgs(text[loc[1]:])
		if err != nil {
			return fmt.Errorf("%s:%d: %v", file, lineOf(loc[0]), err)
		}
		if len(args) == 0 {
			return fmt.Errorf("%s:%d: redis.call without a command", file, lineOf(loc[0]))
		}
		cmd, ok := unquote(args[0])
		if !ok {
			return fmt.Errorf("%s:%d: command must be a string literal, got %s", file, lineOf(loc[0]), args[0])
		}
		cmd = strings.ToUpper(cmd)
		switch {
		case refused[cmd]:
			return fmt.Errorf("%s:%d: command %s is not allowed in a lifecycle script", file, lineOf(loc[0]), cmd)
		case keyless[cmd]:
			continue
		}
		if len(args) < 2 {
			return fmt.Errorf("%s:%d: %s without a key", file, lineOf(loc[0]), cmd)
		}
		keyArgs := args[1:2]
		if allKeys[cmd] {
			keyArgs = args[1:]
		}
		for _, k := range keyArgs {
			if !isKeyRef(k, aliases) {
				return fmt.Errorf("%s:%d: %s reaches key %q, which is not a declared KEYS[i]", file, lineOf(loc[0]), cmd, k)
			}
		}
	}
	return nil
}

func isKeyRef(expr string, aliases map[string]bool) bool {
	expr = strings.TrimSpace(expr)
	if aliases[expr] {
		return true
	}
	m := keysRefRe.FindStringSubmatchIndex(expr)
	return m != nil && m[0] == 0 && m[1] == len(expr)
}

// splitArgs splits the argument list that follows "redis.call(" at top-level
// commas, up to the matching ")".
func splitArgs(s string) ([]string, error) {
	depth, start := 0, 0
	var args []string
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"':
			quote = c
		case '(', '{', '[':
			depth++
		case ')', '}', ']':
			if depth == 0 {
				if a := strings.TrimSpace(s[start:i]); a != "" || len(args) > 0 {
					args = append(args, a)
				}
				return args, nil
			}
			depth--
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return nil, fmt.Errorf("unterminated redis.call")
}

func unquote(s string) (string, bool) {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1], true
	}
	return "", false
}

// parseShapes reads the reply shapes on one RETURNS line: a line that starts
// with "{" holds one or more shapes separated by "|", then free text; any
// other line is free text.
//
//	{"OK"|"EXISTS", status string, created_ms int} | {"NOT_FOUND"}  doc...
func (s *Script) parseShapes(line string) error {
	if !strings.HasPrefix(line, "{") {
		return nil
	}
	for {
		end := strings.IndexByte(line, '}')
		if end < 0 {
			return fmt.Errorf("unterminated reply shape %q", line)
		}
		sh, err := parseShape(line[1:end])
		if err != nil {
			return err
		}
		s.Shapes = append(s.Shapes, sh)
		line = strings.TrimSpace(line[end+1:])
		rest, more := strings.CutPrefix(line, "|")
		if !more {
			return nil
		}
		line = strings.TrimSpace(rest)
		if !strings.HasPrefix(line, "{") {
			return fmt.Errorf("a \"|\" must be followed by a reply shape, got %q", line)
		}
	}
}

func parseShape(body string) (Shape, error) {
	var sh Shape
	if strings.ContainsAny(body, "{[") {
		return sh, fmt.Errorf("nested values are not declarable in a reply shape: {%s}", body)
	}
	parts := strings.Split(body, ",")
	for _, o := range strings.Split(parts[0], "|") {
		m := outcomeRe.FindStringSubmatch(strings.TrimSpace(o))
		if m == nil {
			return sh, fmt.Errorf("a reply shape starts with its outcome(s), quoted upper-case names joined by |: got %q", strings.TrimSpace(parts[0]))
		}
		sh.Outcomes = append(sh.Outcomes, m[1])
	}
	for _, p := range parts[1:] {
		m := fieldRe.FindStringSubmatch(strings.Join(strings.Fields(p), " "))
		if m == nil {
			return sh, fmt.Errorf("malformed reply element %q (want: name string|int|bytes)", strings.TrimSpace(p))
		}
		sh.Fields = append(sh.Fields, Field{Name: m[1], Type: m[2]})
	}
	return sh, nil
}

// checkShapes refuses a declaration a decoder could not follow: an outcome
// declared twice, an element named twice in one shape or named "outcome",
// or one name with two types.
func checkShapes(shapes []Shape) error {
	outcomes := map[string]bool{}
	types := map[string]string{}
	for _, sh := range shapes {
		for _, o := range sh.Outcomes {
			if outcomes[o] {
				return fmt.Errorf("outcome %q declared twice", o)
			}
			outcomes[o] = true
		}
		names := map[string]bool{}
		for _, f := range sh.Fields {
			if f.Name == "outcome" || names[f.Name] {
				return fmt.Errorf("element %q of %v named twice", f.Name, sh.Outcomes)
			}
			names[f.Name] = true
			if t, ok := types[f.Name]; ok && t != f.Type {
				return fmt.Errorf("element %q is %s in one shape and %s in another", f.Name, t, f.Type)
			}
			types[f.Name] = f.Type
		}
	}
	return nil
}
