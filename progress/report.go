package progress

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// Kind says what a claim asserts.
type Kind string

// Claim kinds.
const (
	// Positive: something was found. Only EVIDENCE_FOUND facts support it.
	Positive Kind = "positive"
	// Negative: nothing was found, within the scope of the cited calls.
	// EVIDENCE_FOUND and NO_EVIDENCE facts both support it.
	Negative Kind = "negative"
)

// Claim is one statement of a progress report and the calls it rests on.
type Claim struct {
	Text  string   `json:"text"`
	Kind  Kind     `json:"kind"`
	Cites []string `json:"cites"`
}

// Report is an agent's progress report: its claims, in order.
type Report struct {
	Claims []Claim `json:"claims"`
}

// Default bounds of a report.
const (
	DefaultMaxReportBytes = 64 << 10
	DefaultMaxClaims      = 64
	DefaultMaxCites       = 16
	DefaultMaxTextBytes   = 2048
)

// ReportLimits bound what ParseReport accepts. A zero field takes its default.
type ReportLimits struct {
	MaxBytes     int // the whole report, in bytes
	MaxClaims    int // claims per report
	MaxCites     int // citations per claim
	MaxTextBytes int // bytes of one claim's text
}

func (l ReportLimits) withDefaults() (ReportLimits, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.MaxBytes, DefaultMaxReportBytes)
	def(&l.MaxClaims, DefaultMaxClaims)
	def(&l.MaxCites, DefaultMaxCites)
	def(&l.MaxTextBytes, DefaultMaxTextBytes)
	if l.MaxBytes < 0 || l.MaxBytes > 1<<20 || l.MaxClaims < 0 || l.MaxClaims > 1024 ||
		l.MaxCites < 0 || l.MaxCites > 256 || l.MaxTextBytes < 0 || l.MaxTextBytes > 64<<10 {
		return l, canonical.Errorf(canonical.CodeInvalidArgument,
			"report limits must be in 1..1MiB bytes, 1..1024 claims, 1..256 cites, 1..64KiB text")
	}
	return l, nil
}

// ParseError says where a report is malformed and what to fix. Its text is
// fixed and names positions, never the report's own content, so it is safe
// to show the agent.
type ParseError struct {
	Claim int    // index of the claim at fault, -1 for the report as a whole
	Cite  int    // index of the citation at fault, -1 for none
	Fix   string // what to change
}

// Error implements error.
func (e *ParseError) Error() string { return "progress report: " + e.Path() + ": " + e.Fix }

// Unwrap makes canonical.CodeOf a parse error INVALID_PROGRESS_PROTOCOL and
// errors.Is(err, ErrInvalidProgressProtocol) true.
func (e *ParseError) Unwrap() error { return ErrInvalidProgressProtocol }

// Path names the part of the report at fault, as claims[i].cites[j].
func (e *ParseError) Path() string {
	switch {
	case e.Claim < 0:
		return "report"
	case e.Cite < 0:
		return fmt.Sprintf("claims[%d]", e.Claim)
	}
	return fmt.Sprintf("claims[%d].cites[%d]", e.Claim, e.Cite)
}

// ParseReport parses a progress report strictly: valid UTF-8 JSON of exactly
// the documented shape (see the package documentation), within lim; unknown
// or duplicate fields, nulls, lone surrogate escapes, empty texts, invalid or
// repeated tool_call_ids and trailing data are refused with a *ParseError.
// Limits out of range are INVALID_ARGUMENT.
func ParseReport(data []byte, lim ReportLimits) (Report, error) {
	lim, err := lim.withDefaults()
	if err != nil {
		return Report{}, err
	}
	p := parser{lim: lim}
	r, err := p.parse(data)
	if err != nil {
		return Report{}, err
	}
	return r, nil
}

// parser reads a report with the module's strict JSON lexer: strings
// with valid UTF-8 and paired surrogate escapes only, the RFC 8259 grammar,
// and no repeated field (every object of a report has known fields only,
// each checked once). It descends at most three levels, whatever the input.
type parser struct {
	lim  ReportLimits
	data []byte
	pos  int
	buf  []byte
}

func reportErr(fix string) *ParseError { return &ParseError{Claim: -1, Cite: -1, Fix: fix} }

var errSyntax = reportErr("report is not valid JSON")

func (p *parser) parse(data []byte) (Report, error) {
	if len(data) > p.lim.MaxBytes {
		return Report{}, reportErr(fmt.Sprintf("report is over %d bytes: state fewer or shorter claims", p.lim.MaxBytes))
	}
	if !utf8.Valid(data) {
		return Report{}, reportErr("report is not valid UTF-8")
	}
	p.data = data
	var r Report
	seen := map[string]bool{}
	shape := reportErr("report must be a JSON object {\"claims\":[...]}")
	if !p.open('{') {
		return r, shape
	}
	for n := 0; ; n++ {
		more, err := p.more('}', n == 0)
		if err != nil {
			return r, err
		}
		if !more {
			break
		}
		key, err := p.key(shape)
		if err != nil {
			return r, err
		}
		if seen[key] {
			return r, reportErr("report repeats a field")
		}
		seen[key] = true
		if key != "claims" {
			return r, reportErr("report has an unknown field: the only field is \"claims\"")
		}
		if r.Claims, err = p.claims(); err != nil {
			return r, err
		}
	}
	if strictjson.SkipSpace(p.data, p.pos) != len(p.data) {
		return r, reportErr("report has data after its closing brace")
	}
	if !seen["claims"] {
		return r, reportErr("report needs \"claims\": a list of 1 or more claims")
	}
	return r, nil
}

func (p *parser) claims() ([]Claim, error) {
	shape := reportErr(fmt.Sprintf("\"claims\" must be a list of 1 to %d claims", p.lim.MaxClaims))
	if !p.open('[') {
		return nil, shape
	}
	claims := []Claim{}
	for n := 0; ; n++ {
		more, err := p.more(']', n == 0)
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		if len(claims) == p.lim.MaxClaims {
			return nil, shape
		}
		c, err := p.claim(len(claims))
		if err != nil {
			return nil, err
		}
		claims = append(claims, c)
	}
	if len(claims) == 0 {
		return nil, shape
	}
	return claims, nil
}

func (p *parser) claim(i int) (Claim, error) {
	at := func(fix string) *ParseError { return &ParseError{Claim: i, Cite: -1, Fix: fix} }
	shape := at("a claim is an object {\"text\",\"kind\",\"cites\"} and nothing else")
	var c Claim
	if !p.open('{') {
		return c, shape
	}
	seen := map[string]bool{}
	for n := 0; ; n++ {
		more, err := p.more('}', n == 0)
		if err != nil {
			return c, err
		}
		if !more {
			break
		}
		key, err := p.key(shape)
		if err != nil {
			return c, err
		}
		if seen[key] {
			return c, at("claim repeats a field")
		}
		seen[key] = true
		switch key {
		case "text":
			s, ok, err := p.str()
			if err != nil {
				return c, err
			}
			if !ok || strings.TrimSpace(s) == "" || len(s) > p.lim.MaxTextBytes {
				return c, at(fmt.Sprintf("\"text\" must be a non-blank string of at most %d bytes", p.lim.MaxTextBytes))
			}
			c.Text = s
		case "kind":
			s, ok, err := p.str()
			if err != nil {
				return c, err
			}
			if !ok || (Kind(s) != Positive && Kind(s) != Negative) {
				return c, at("\"kind\" must be \"positive\" (something was found) or \"negative\" (nothing was found)")
			}
			c.Kind = Kind(s)
		case "cites":
			if c.Cites, err = p.cites(i); err != nil {
				return c, err
			}
		default:
			return c, shape
		}
	}
	if !seen["text"] || !seen["kind"] || !seen["cites"] {
		return c, at("claim needs \"text\", \"kind\" and \"cites\"")
	}
	return c, nil
}

func (p *parser) cites(i int) ([]string, error) {
	shape := &ParseError{Claim: i, Cite: -1, Fix: fmt.Sprintf("\"cites\" must be a list of 1 to %d tool_call_ids", p.lim.MaxCites)}
	if !p.open('[') {
		return nil, shape
	}
	cites := []string{}
	for n := 0; ; n++ {
		more, err := p.more(']', n == 0)
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		j := len(cites)
		if j == p.lim.MaxCites {
			return nil, shape
		}
		id, ok, err := p.str()
		if err != nil {
			return nil, err
		}
		if !ok || canonical.ValidateToolCallID(id) != nil {
			return nil, &ParseError{Claim: i, Cite: j, Fix: "cite a tool_call_id exactly as it was given (1-128 bytes of [A-Za-z0-9_.-])"}
		}
		for _, prev := range cites {
			if prev == id {
				return nil, &ParseError{Claim: i, Cite: j, Fix: "cite each tool_call_id once per claim"}
			}
		}
		cites = append(cites, id)
	}
	if len(cites) == 0 {
		return nil, shape
	}
	return cites, nil
}

// open consumes the opening delimiter c of a container, or reports false
// and consumes nothing.
func (p *parser) open(c byte) bool {
	p.pos = strictjson.SkipSpace(p.data, p.pos)
	if p.pos < len(p.data) && p.data[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

// more reports whether the container that closes with end has another
// element (first: none was read yet), consuming the ',' before it or the closing delimiter after the
// last one. Anything else is a syntax error.
func (p *parser) more(end byte, first bool) (bool, error) {
	p.pos = strictjson.SkipSpace(p.data, p.pos)
	if p.pos >= len(p.data) {
		return false, errSyntax
	}
	switch c := p.data[p.pos]; {
	case c == end:
		p.pos++
		return false, nil
	case first:
		return true, nil
	case c == ',':
		p.pos = strictjson.SkipSpace(p.data, p.pos+1)
		return true, nil
	}
	return false, errSyntax
}

// key reads an object key and its ':'; a value of another type is fail.
func (p *parser) key(fail *ParseError) (string, error) {
	s, ok, err := p.str()
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fail
	}
	p.pos = strictjson.SkipSpace(p.data, p.pos)
	if p.pos >= len(p.data) || p.data[p.pos] != ':' {
		return "", errSyntax
	}
	p.pos++
	return s, nil
}

// str reads a string value; ok is false, with nothing consumed, when the
// next value is not a string.
func (p *parser) str() (s string, ok bool, err error) {
	p.pos = strictjson.SkipSpace(p.data, p.pos)
	if p.pos >= len(p.data) || p.data[p.pos] != '"' {
		return "", false, nil
	}
	buf, end, escaped, serr := strictjson.DecodeString(p.buf[:0], p.data, p.pos)
	if serr != nil {
		if strings.Contains(serr.Reason, "surrogate") {
			return "", false, reportErr("report has a lone surrogate escape")
		}
		return "", false, errSyntax
	}
	if escaped {
		s, p.buf = string(buf), buf
	} else {
		s = string(p.data[p.pos+1 : end-1])
	}
	p.pos = end
	return s, true, nil
}
