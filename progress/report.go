package progress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/canonical"
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

type parser struct {
	lim ReportLimits
	dec *json.Decoder
}

func reportErr(fix string) *ParseError { return &ParseError{Claim: -1, Cite: -1, Fix: fix} }

func (p *parser) parse(data []byte) (Report, error) {
	if len(data) > p.lim.MaxBytes {
		return Report{}, reportErr(fmt.Sprintf("report is over %d bytes: state fewer or shorter claims", p.lim.MaxBytes))
	}
	if !utf8.Valid(data) {
		return Report{}, reportErr("report is not valid UTF-8")
	}
	if !surrogatesPaired(data) {
		return Report{}, reportErr("report has a lone surrogate escape")
	}
	p.dec = json.NewDecoder(bytes.NewReader(data))
	var r Report
	seen := map[string]bool{}
	if err := p.delim('{', reportErr("report must be a JSON object {\"claims\":[...]}")); err != nil {
		return r, err
	}
	for p.dec.More() {
		key, err := p.key(reportErr("report must be a JSON object {\"claims\":[...]}"))
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
	if err := p.delim('}', reportErr("report is not valid JSON")); err != nil {
		return r, err
	}
	if _, err := p.dec.Token(); !errors.Is(err, io.EOF) {
		return r, reportErr("report has data after its closing brace")
	}
	if !seen["claims"] {
		return r, reportErr("report needs \"claims\": a list of 1 or more claims")
	}
	return r, nil
}

func (p *parser) claims() ([]Claim, error) {
	shape := reportErr(fmt.Sprintf("\"claims\" must be a list of 1 to %d claims", p.lim.MaxClaims))
	if err := p.delim('[', shape); err != nil {
		return nil, err
	}
	claims := []Claim{}
	for p.dec.More() {
		if len(claims) == p.lim.MaxClaims {
			return nil, shape
		}
		c, err := p.claim(len(claims))
		if err != nil {
			return nil, err
		}
		claims = append(claims, c)
	}
	if err := p.delim(']', reportErr("report is not valid JSON")); err != nil {
		return nil, err
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
	if err := p.delim('{', shape); err != nil {
		return c, err
	}
	seen := map[string]bool{}
	for p.dec.More() {
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
			s, ok := p.str()
			if !ok || strings.TrimSpace(s) == "" || len(s) > p.lim.MaxTextBytes {
				return c, at(fmt.Sprintf("\"text\" must be a non-blank string of at most %d bytes", p.lim.MaxTextBytes))
			}
			c.Text = s
		case "kind":
			s, ok := p.str()
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
	if err := p.delim('}', at("claim is not valid JSON")); err != nil {
		return c, err
	}
	if !seen["text"] || !seen["kind"] || !seen["cites"] {
		return c, at("claim needs \"text\", \"kind\" and \"cites\"")
	}
	return c, nil
}

func (p *parser) cites(i int) ([]string, error) {
	shape := &ParseError{Claim: i, Cite: -1, Fix: fmt.Sprintf("\"cites\" must be a list of 1 to %d tool_call_ids", p.lim.MaxCites)}
	if err := p.delim('[', shape); err != nil {
		return nil, err
	}
	cites := []string{}
	for p.dec.More() {
		j := len(cites)
		if j == p.lim.MaxCites {
			return nil, shape
		}
		id, ok := p.str()
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
	if err := p.delim(']', shape); err != nil {
		return nil, err
	}
	if len(cites) == 0 {
		return nil, shape
	}
	return cites, nil
}

// delim reads one delimiter token, or returns fail.
func (p *parser) delim(want json.Delim, fail *ParseError) error {
	tok, err := p.dec.Token()
	if err != nil {
		return reportErr("report is not valid JSON")
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fail
	}
	return nil
}

// key reads an object key.
func (p *parser) key(fail *ParseError) (string, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return "", reportErr("report is not valid JSON")
	}
	s, ok := tok.(string)
	if !ok {
		return "", fail
	}
	return s, nil
}

// str reads a string value. A value of another type, or a syntax error, is
// not ok; after a syntax error every later token fails too.
func (p *parser) str() (string, bool) {
	tok, err := p.dec.Token()
	if err != nil {
		return "", false
	}
	s, ok := tok.(string)
	return s, ok
}

// surrogatesPaired reports whether every \u escape of a UTF-16 surrogate in
// the JSON strings of data is a high surrogate followed by a low one.
// encoding/json would silently turn a lone one into U+FFFD; a strict parser
// refuses it instead. data that is not JSON may give any answer: the decoder
// refuses it anyway.
func surrogatesPaired(data []byte) bool {
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !inString {
			inString = c == '"'
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if i+1 >= len(data) {
				return true
			}
			if data[i+1] != 'u' {
				i++
				continue
			}
			u, ok := hex4(data, i+2)
			if !ok {
				return true // malformed escape: the decoder reports it
			}
			i += 5
			switch {
			case u >= 0xDC00 && u <= 0xDFFF:
				return false
			case u >= 0xD800 && u <= 0xDBFF:
				if i+2 >= len(data) || data[i+1] != '\\' || data[i+2] != 'u' {
					return false
				}
				lo, ok := hex4(data, i+3)
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return false
				}
				i += 6
			}
		}
	}
	return true
}

func hex4(data []byte, at int) (rune, bool) {
	if at+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
