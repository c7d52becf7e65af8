package record_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/internal/record"
)

// The README's table of the header's byte ranges is the layout's: each
// field's row, with its 1-based range (as cut -c counts), is there.
func TestReadmeShowsTheLayout(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range record.Fields {
		row := fmt.Sprintf("| %d–%d | `%s` | %s |", f.Off+1, f.Off+f.Len, f.Name, f.Doc)
		if !strings.Contains(string(b), row) {
			t.Errorf("README.md has no row %q", row)
		}
	}
	if row := fmt.Sprintf("| %d– | owner, one space, tool |", record.OffOwner+1); !strings.Contains(string(b), row) {
		t.Errorf("README.md has no row %q", row)
	}
}
