package redistest

import (
	"strings"
	"testing"
)

// A sentinel watches the master it is given and names it.
func TestSentinel(t *testing.T) {
	master, err := StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(master.Stop)
	s, err := StartSentinel(master, "toolcanon-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	reply, err := Command(s.Addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "toolcanon-test")
	if err != nil || reply != "127.0.0.1\n"+strings.TrimPrefix(master.Addr, "127.0.0.1:") {
		t.Fatalf("%q, %v", reply, err)
	}
}
