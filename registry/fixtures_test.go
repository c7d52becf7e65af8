package registry

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

const searchInputSchema = `{
  "type": "object",
  "additionalProperties": false,
  "description": "Search the knowledge base.",
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 256},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50},
    "mode":  {"type": "string", "maxLength": 16, "enum": ["exact", "semantic"]},
    "tags":  {"type": "array", "maxItems": 8, "uniqueItems": true, "items": {"type": "string", "maxLength": 32}}
  },
  "required": ["query"]
}`

const searchOutputSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "hits": {"type": "array", "maxItems": 50, "items": {
      "type": "object", "additionalProperties": false,
      "properties": {"id": {"type": "string", "maxLength": 64}, "score": {"type": "number", "minimum": 0, "maximum": 1}},
      "required": ["id", "score"]}},
    "truncated": {"type": "boolean"}
  },
  "required": ["hits"]
}`

func searchDef() Definition {
	return Definition{
		Name:         "kb.search",
		Version:      "1.0.0",
		Description:  "Search the knowledge base.",
		InputSchema:  []byte(searchInputSchema),
		OutputSchema: []byte(searchOutputSchema),
		Effect:       EffectRead,
		Risk:         RiskLow,
		Permissions:  []string{"kb.read", "kb.audit"},
		Timeout:      30 * time.Second,
	}
}

func mustNew(tb testing.TB, defs ...Definition) *Registry {
	tb.Helper()
	r, err := New(defs...)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

var (
	testNow = time.Date(2026, 7, 24, 12, 0, 0, 0, time.UTC)
	fenceA  = Fence{ProjectVersion: "p-12", RoleBindingVersion: "rb-40"}
	fenceB  = Fence{ProjectVersion: "p-13", RoleBindingVersion: "rb-40"}
)

func searchRequest(input string) Request {
	return Request{
		Project:   "proj-1",
		Principal: Principal{Subject: "user:alice", ExpiresAt: testNow.Add(time.Hour)},
		Tool:      "kb.search",
		Version:   "1.0.0",
		Input:     []byte(input),
	}
}

// spyPolicy records every permission it is asked about and answers from a
// per-permission table (default: allow under fenceA).
type spyPolicy struct {
	mu      sync.Mutex
	asked   []string
	answers map[string]Decision
	errs    map[string]error
	panics  map[string]bool
}

func (s *spyPolicy) Authorize(_ context.Context, project string, p Principal, perm string) (Decision, error) {
	s.mu.Lock()
	s.asked = append(s.asked, perm)
	s.mu.Unlock()
	if s.panics[perm] {
		panic("policy store exploded")
	}
	if err := s.errs[perm]; err != nil {
		return Decision{}, err
	}
	if d, ok := s.answers[perm]; ok {
		return d, nil
	}
	return Decision{Verdict: VerdictAllow, Fence: fenceA}, nil
}

func (s *spyPolicy) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.asked...)
}

// wantCode fails unless err carries code, through errors.Is and CodeOf.
func wantCode(tb testing.TB, err error, code canonical.Code) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("want %s, got no error", code)
	}
	if !errors.Is(err, &canonical.Error{Code: code}) || canonical.CodeOf(err) != code {
		tb.Fatalf("want %s, got %v (code %s)", code, err, canonical.CodeOf(err))
	}
}

// wantSchemaError fails unless err is a *SchemaError at path for keyword.
func wantSchemaError(tb testing.TB, err error, path, keyword string) {
	tb.Helper()
	var se *SchemaError
	if !errors.As(err, &se) {
		tb.Fatalf("want *SchemaError at %q/%q, got %v", path, keyword, err)
	}
	if se.Path != path || se.Keyword != keyword {
		tb.Fatalf("want *SchemaError at %q keyword %q, got %q keyword %q (%v)", path, keyword, se.Path, se.Keyword, err)
	}
	wantCode(tb, err, canonical.CodeInvalidArgument)
	if !strings.Contains(err.Error(), keyword) {
		tb.Fatalf("message %q does not name the keyword", err)
	}
}

// withInput returns searchDef with another input schema.
func withInput(schema string) Definition {
	d := searchDef()
	d.InputSchema = []byte(schema)
	return d
}
