package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/internal/redistest"
)

// traceCall is one execute_tool line of the demo's trace and the lines
// indented under it.
type traceCall struct {
	head     string
	children []string // "name label", durations dropped
}

var durationField = regexp.MustCompile(`^\d+(\.\d+)?(µs|ms|s)$`)

// parseTrace reads the trace section: every root span line is at two
// spaces, its children at four.
func parseTrace(t *testing.T, out string) (header string, calls []traceCall, roots []string) {
	t.Helper()
	_, section, ok := strings.Cut(out, "\ntrace: ")
	if !ok {
		t.Fatalf("no trace section:\n%s", out)
	}
	lines := strings.Split(strings.TrimRight(section, "\n"), "\n")
	header = lines[0]
	for _, l := range lines[1:] {
		fields := strings.Fields(l)
		if len(fields) < 2 {
			t.Fatalf("trace line %q", l)
		}
		// The duration is the first field that looks like one.
		di := -1
		for i, f := range fields {
			if durationField.MatchString(f) {
				di = i
				break
			}
		}
		if di < 1 {
			t.Fatalf("trace line %q has no duration", l)
		}
		text := strings.Join(append(append([]string{}, fields[:di]...), fields[di+1:]...), " ")
		switch {
		case strings.HasPrefix(l, "    "):
			if len(calls) == 0 || !strings.HasPrefix(roots[len(roots)-1], "execute_tool") {
				t.Fatalf("child line %q under no call", l)
			}
			calls[len(calls)-1].children = append(calls[len(calls)-1].children, text)
		case strings.HasPrefix(l, "  "):
			roots = append(roots, text)
			if strings.HasPrefix(text, "execute_tool") {
				calls = append(calls, traceCall{head: text})
			}
		default:
			t.Fatalf("trace line %q is not indented", l)
		}
	}
	return header, calls, roots
}

// The demo's calls, as its trace must show them, in the order they end up
// (the first three ran in parallel, so their order is not fixed).
var wantTrace = map[string][]string{
	"execute_tool search_docs call_kb_1 READY EVIDENCE_FOUND":  {"preflight", "EVALSHA begin", "tool", "projector EVIDENCE_FOUND", "EVALSHA complete"},
	"execute_tool query_logs call_logs_1 READY EVIDENCE_FOUND": {"preflight", "EVALSHA begin", "tool", "projector EVIDENCE_FOUND", "EVALSHA complete"},
	"execute_tool search_docs call_kb_2 READY NO_EVIDENCE":     {"preflight", "EVALSHA begin", "tool", "projector NO_EVIDENCE", "EVALSHA complete"},
	// The handle in its arguments is read in the run's handle index, then
	// in the call that minted it.
	"execute_tool query_logs call_logs_2 READY EVIDENCE_FOUND":     {"preflight", "HMGET", "HMGET", "EVALSHA begin", "tool", "projector EVIDENCE_FOUND", "EVALSHA complete"},
	"execute_tool search_docs call_kb_1 ERROR DUPLICATE_TOOL_CALL": {"preflight", "EVALSHA begin DUPLICATE_TOOL_CALL"},
	"execute_tool search_docs call_x_1 ERROR RUN_MISMATCH":         {"preflight RUN_MISMATCH"},
	"execute_tool search_docs call_kb_3 ERROR RESULT_TOO_LARGE":    {"preflight", "EVALSHA begin", "tool RESULT_TOO_LARGE", "EVALSHA complete"},
	"execute_tool search_docs call_kb_4 ERROR INVALID_INPUT":       {"preflight INVALID_INPUT"},
	"execute_tool update_ticket call_tk_1 ERROR NOT_READ_ONLY":     {"preflight NOT_READ_ONLY"},
	"execute_tool search_docs ERROR INVALID_TOOL_CALL_ID":          {"preflight INVALID_TOOL_CALL_ID"},
	"execute_tool search_docs call_kb_9 ERROR RUN_INACTIVE":        {"preflight", "EVALSHA begin RUN_INACTIVE"},
}

func checkTrace(t *testing.T, out string) {
	t.Helper()
	checkDemo(t, out)
	header, calls, roots := parseTrace(t, out)
	if !strings.Contains(header, "11 calls") {
		t.Errorf("trace header %q", header)
	}
	if len(calls) != len(wantTrace) {
		t.Errorf("%d calls traced, want %d", len(calls), len(wantTrace))
	}
	for _, c := range calls {
		want, ok := wantTrace[c.head]
		if !ok {
			t.Errorf("unexpected call line %q", c.head)
			continue
		}
		if strings.Join(c.children, " | ") != strings.Join(want, " | ") {
			t.Errorf("%s:\n got %q\nwant %q", c.head, c.children, want)
		}
	}
	// The sequential calls keep their order; close_run comes before the late call.
	seq := []string{"DUPLICATE_TOOL_CALL", "RUN_MISMATCH", "RESULT_TOO_LARGE", "INVALID_INPUT", "NOT_READ_ONLY",
		"INVALID_TOOL_CALL_ID", "EVALSHA close_run", "RUN_INACTIVE", "ZRANGE", "HMGET", "EVALSHA observe_progress"}
	at := 0
	for _, r := range roots {
		if at < len(seq) && strings.Contains(r, seq[at]) {
			at++
		}
	}
	if at != len(seq) {
		t.Errorf("roots out of order at %q:\n%s", seq[min(at, len(seq)-1)], strings.Join(roots, "\n"))
	}
	if t.Failed() {
		t.Log(out)
	}
}

func TestDemoTraceOnMemoryStore(t *testing.T) {
	code, out, stderr := runCmd("demo", "--trace")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkTrace(t, out)
}

func TestDemoTraceOnRedis(t *testing.T) {
	code, out, stderr := runCmd("demo", "--trace", "--redis", redistest.Addr(t))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkTrace(t, out)
}

func TestDemoWithoutTraceHasNone(t *testing.T) {
	code, out, _ := runCmd("demo")
	if code != exitOK || strings.Contains(out, "\ntrace: ") || strings.Contains(out, "execute_tool") {
		t.Fatalf("exit %d; a trace without --trace:\n%s", code, out)
	}
}

func TestDurationFormat(t *testing.T) {
	cases := map[string]string{"411ns": "0.41µs", "1.5µs": "1.50µs", "12.34µs": "12.3µs", "999.9µs": "1.00ms",
		"62.4ms": "62.4ms", "999.7ms": "1.00s", "1.2345s": "1.23s", "125s": "125s"}
	for in, want := range cases {
		d, err := time.ParseDuration(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := duration(d); got != want {
			t.Errorf("duration(%s) = %q, want %q", in, got, want)
		}
	}
}
