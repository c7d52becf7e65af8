package redisstore

import (
	"strconv"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/lua"
)

func TestOwnerAndDigestForms(t *testing.T) {
	owner := canonical.NewOwner()
	stored := storeOwner(owner)
	if !strings.HasPrefix(stored, ownerMark) || len(stored) != 23 || loadOwner(stored) != owner {
		t.Fatalf("owner %s stored as %q, loaded as %q", owner, stored, loadOwner(stored))
	}
	// Owners of another form are kept as they are, and come back unchanged.
	for _, o := range []string{"o", "worker-1", strings.ToUpper(owner), owner + "0", owner[:31] + "g"} {
		if storeOwner(o) != o || loadOwner(storeOwner(o)) != o {
			t.Errorf("owner %q stored as %q", o, storeOwner(o))
		}
	}
	d := canonical.RequestDigest([]byte(`{"q":1}`))
	if s := storeDigest(d); len(s) != 43 || loadDigest(s) != d {
		t.Fatalf("digest %s stored as %q, loaded as %q", d, s, loadDigest(s))
	}
	if storeDigest("abc") != "abc" || loadDigest("abc") != "abc" {
		t.Fatal("a digest of another form must be kept as it is")
	}
	c := canonical.Completion{Status: canonical.StatusReady, Evidence: canonical.EvidenceFound, Raw: []byte("r"), Result: []byte(`{}`)}
	other := c
	other.Raw = []byte("s")
	if a, b := completionDigest(&c), completionDigest(&other); len(a) != 11 || a == b || strings.ContainsAny(a, " =") {
		t.Fatalf("completion digests %q and %q", a, b)
	}
}

func TestParseMeta(t *testing.T) {
	owner := canonical.NewOwner()
	d := canonical.RequestDigest([]byte(`{}`))
	line := "ERROR ERROR error=RESULT_TOO_LARGE tool=kb.search owner=" + storeOwner(owner) +
		" created=1700000000001 updated=1700000000002 lease=1700000000003 sizes=2,0,0 request_sha256=" + storeDigest(d) +
		" completion=abc overflow=1"
	m, ok := parseMeta(line)
	want := meta{status: "ERROR", evidence: "ERROR", errCode: "RESULT_TOO_LARGE", tool: "kb.search", owner: owner,
		requestDigest: d, created: 1700000000001, updated: 1700000000002, lease: 1700000000003, sizes: [3]int64{2, 0, 0}}
	if !ok || m != want {
		t.Fatalf("parseMeta = %+v, %v; want %+v", m, ok, want)
	}
	for _, bad := range []string{"", "READY", "READY EVIDENCE_FOUND tool=t", "READY EVIDENCE_FOUND sizes=1,2",
		"READY EVIDENCE_FOUND sizes=1,-2,3", "READY EVIDENCE_FOUND sizes=1,x,3", "READY EVIDENCE_FOUND sizes=1,2,3,4",
		"READY EVIDENCE_FOUND sizes=1,2,3,", "READY EVIDENCE_FOUND sizes=,1,2"} {
		if _, ok := parseMeta(bad); ok {
			t.Errorf("parseMeta(%q) accepted", bad)
		}
	}
	// A line whose owner and digest are kept as given decodes without
	// allocating.
	plain := "READY EVIDENCE_FOUND id=abcdefgh tool=kb.search owner=worker-1 created=1 updated=2 sizes=2,3,4 request_sha256=abc"
	if m, ok := parseMeta(plain); !ok || m.owner != "worker-1" || m.sizes != [3]int64{2, 3, 4} || m.idTag != "abcdefgh" {
		t.Fatalf("parseMeta(%q) = %+v, %v", plain, m, ok)
	}
	if n := testing.AllocsPerRun(100, func() { parseMeta(plain) }); n != 0 {
		t.Errorf("parseMeta allocates %v times per line", n)
	}
}

// The fields read are those the scripts write: as many parts as layout.lib
// cuts a payload into at most, named as its part function names them.
func TestPartFields(t *testing.T) {
	f := partFields("raw")
	if len(f) != maxParts || f[0] != "raw" || f[1] != "raw.2" || f[maxParts-1] != "raw."+strconv.Itoa(maxParts) {
		t.Fatalf("partFields(raw) = %v", f)
	}
	lib, err := lua.FS.ReadFile("layout.lib")
	if err != nil {
		t.Fatal(err)
	}
	if want := "\nlocal PARTS = " + strconv.Itoa(maxParts) + "\n"; !strings.Contains(string(lib), want) {
		t.Fatalf("layout.lib does not say %q: the store reads another number of parts than the scripts write", strings.TrimSpace(want))
	}
}
