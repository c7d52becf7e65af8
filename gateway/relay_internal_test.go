package gateway

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzAgentText: whatever text an upstream puts in a progress or log
// message, the agent gets valid UTF-8 of at most MaxRelayedText bytes with
// the planted password redacted.
func FuzzAgentText(f *testing.F) {
	for _, s := range []string{"step 1, password=hunter2", strings.Repeat("é", 4000), strings.Repeat("a ", 3000) + "password=hunter2",
		"\xff\xfe password=hunter2", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := agentText(s + " password=hunter2")
		if len(out) > MaxRelayedText || (utf8.ValidString(s) && !utf8.ValidString(out)) {
			t.Fatalf("%d bytes, valid %v: %q", len(out), utf8.ValidString(out), out)
		}
		if len(s) < 1024 && !strings.Contains(s, "hunter2") && strings.Contains(out, "hunter2") {
			t.Fatalf("the password passed: %q", out)
		}
	})
}
