package boundary_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
)

// The README's code table names only stable codes, each with the hint the
// agent gets, and lists the gateway's newest ones.
func TestReadmeCodeTable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "## Stable codes")
	if !ok {
		t.Fatal("the README has no Stable codes section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	seen := map[canonical.Code]bool{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) != 2 || !strings.HasPrefix(cells[0], "| `") {
			continue
		}
		c := canonical.Code(strings.Trim(cells[0], "| `"))
		hint := strings.TrimSuffix(cells[1], " |")
		if !c.Valid() {
			t.Errorf("the README lists %q, not a stable code", c)
		}
		if !strings.HasPrefix(hint, "(") && hint != boundary.Hint(c) {
			t.Errorf("%s: the README's hint %q is not the agent's %q", c, hint, boundary.Hint(c))
		}
		seen[c] = true
	}
	for _, c := range []canonical.Code{canonical.CodeUpstreamUnavailable, canonical.CodeCancelled, canonical.CodeRunForbidden, canonical.CodeDuplicateToolCall} {
		if !seen[c] {
			t.Errorf("the README's table lacks %s", c)
		}
	}
	if len(seen) < 31 {
		t.Errorf("the README's table lists %d codes, want all 31", len(seen))
	}
}

// The README's handles section gives the bound on handles per call as the
// code has it.
func TestReadmeHandles(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "### Handles")
	if !ok {
		t.Fatal("the README has no Handles section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	for _, want := range []string{"`boundary.MaxHandlesPerInput` (" + strconv.Itoa(boundary.MaxHandlesPerInput) + ")",
		"`HANDLE_UNKNOWN`", "`HANDLE_FORBIDDEN`", "b.Reveal(ctx, run,", "boundary.Group(", "boundary.WithHandlePolicy(", "boundary.WithoutHandles()",
		strconv.Itoa(canonical.HandleIDLen) + " characters"} {
		if !strings.Contains(sec, want) {
			t.Errorf("the README's Handles section lacks %q", want)
		}
	}
}
