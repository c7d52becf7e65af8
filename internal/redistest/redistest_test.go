package redistest

import (
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

func TestStandaloneAnswers(t *testing.T) {
	addr := Addr(t)
	if _, err := Command(addr, "SET", "redistest:k", "v"); err != nil {
		t.Fatal(err)
	}
	got, err := Command(addr, "GET", "redistest:k")
	if err != nil || got != "v" {
		t.Fatalf("GET = %q, %v", got, err)
	}
}

func TestClusterHasThreeMastersCoveringAllSlots(t *testing.T) {
	addrs := ClusterAddrs(t)
	info, err := Command(addrs[0], "CLUSTER", "INFO")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_size:3"} {
		if !strings.Contains(info, want) {
			t.Fatalf("CLUSTER INFO lacks %q:\n%s", want, info)
		}
	}
}
