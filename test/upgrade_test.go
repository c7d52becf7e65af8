package test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/record"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// oldRelease drives the scripts of an earlier release, kept in
// testdata/layouts/<commit>/ as that release shipped them (includes
// expanded): what a worker of that release sends.
type oldRelease struct {
	name    string
	scripts map[string]*rueidis.Lua
	c       rueidis.Client
	keys    canonical.Keys
	// begin and complete build the release's KEYS and ARGV.
	begin    func(o *oldRelease, run, id, owner, principal string, request []byte, ttl time.Duration) ([]string, []string)
	complete func(o *oldRelease, run, id, owner string, raw, result []byte) ([]string, []string)
}

func loadRelease(t *testing.T, name string, c rueidis.Client, keys canonical.Keys) *oldRelease {
	t.Helper()
	o := &oldRelease{name: name, c: c, keys: keys, scripts: map[string]*rueidis.Lua{}}
	for _, f := range []string{"begin", "complete", "abandon", "close_run", "observe_progress", "await_input", "continue_call"} {
		b, err := os.ReadFile(filepath.Join("testdata", "layouts", name, f+".lua"))
		if os.IsNotExist(err) && (f == "await_input" || f == "continue_call") {
			continue // a release before multi round-trip calls
		}
		if err != nil {
			t.Fatal(err)
		}
		o.scripts[f] = rueidis.NewLuaScript(string(b))
	}
	old := oldKeys{keys}
	switch name {
	case "2d181f9": // run state without generation or owner; a record's meta line
		o.begin = func(o *oldRelease, run, id, owner, _ string, request []byte, ttl time.Duration) ([]string, []string) {
			sum := sha256.Sum256(request)
			ms := strconv.FormatInt(ttl.Milliseconds(), 10)
			return []string{keys.Record(run, id), keys.Run(run), old.index(run), old.leases(run)},
				[]string{id, "kb.search", owner, string(request), hex.EncodeToString(sum[:]), ms, ms,
					"0", "0", "0", "0", "0", "256", "64", "67108864", "1048576", "16384", record.IdentityTag(run, id)}
		}
		o.complete = func(o *oldRelease, run, id, owner string, raw, result []byte) ([]string, []string) {
			return []string{keys.Record(run, id), keys.Run(run), old.index(run), old.leases(run)},
				[]string{owner, "READY", "EVIDENCE_FOUND", "", string(raw), string(result), "d" + owner}
		}
	case "43f4dfc", "42f06c5", "8606eb8": // layouts 1 to 3: the fixed-width header of their version, a run state with generation and owner
		version := map[string]byte{"43f4dfc": '1', "42f06c5": '2', "8606eb8": '3'}[name]
		o.begin = func(o *oldRelease, run, id, owner, principal string, request []byte, ttl time.Duration) ([]string, []string) {
			head, tail := oldBeginHeader(version, owner, "kb.search", record.IdentityTag(run, id),
				canonical.RequestDigest(request), int64(len(request)))
			ms := strconv.FormatInt(ttl.Milliseconds(), 10)
			k := []string{keys.Record(run, id), keys.Run(run), old.index(run), old.leases(run), keys.Live(run)}
			a := []string{id, "kb.search", head, tail, string(request), "", "", ms, ms,
				"0", "0", "0", "0", "0", "256", "64", "67108864", "1048576", "16384",
				canonical.PrincipalTag(principal), record.NewGeneration(), "s3cret"}
			if name == "8606eb8" { // and the run's slot's due set, and audit (off: the run's key in the place of its keys)
				k = append(k, keys.RunSlotIndex(run, canonical.SlotDue), keys.Run(run), keys.Run(run), keys.Run(run))
				a = append(a, run, "", "0")
			}
			return k, a
		}
		o.complete = func(o *oldRelease, run, id, owner string, raw, result []byte) ([]string, []string) {
			digest := record.CompletionDigest(strings.Repeat("ab", 32))
			seg := oldSegment("REF", int64(len(raw)), int64(len(result)), digest, "")
			over := oldSegment("EE1", 0, 0, digest, "RESULT_TOO_LARGE")
			k := []string{keys.Record(run, id), keys.Run(run), old.index(run), old.leases(run)}
			a := []string{id, record.OwnerWord(owner), seg, over, digest, string(raw), "", "", string(result), "", "", ""}
			if name == "8606eb8" { // audit off
				k = append(k, keys.Record(run, id), keys.Record(run, id), keys.Record(run, id))
				a = append(a, "", "", run, record.NewGeneration())
			}
			return k, a
		}
	}
	return o
}

// oldKeys names the keys of a run that the earlier layouts had and this
// one has not.
type oldKeys struct{ canonical.Keys }

func (k oldKeys) index(run string) string  { return k.Prefix() + ":{" + run + "}:done" }
func (k oldKeys) leases(run string) string { return k.Prefix() + ":{" + run + "}:leases" }

// The header of layouts 1 to 3, as their releases encoded it: fixed-width
// fields up to the owner, the owner, a space and the tool.
const (
	oldWidthLen  = 10
	oldWidthCode = 26
)

func oldNum(v int64, width int) string {
	s := strconv.FormatInt(v, 10)
	return strings.Repeat("0", width-len(s)) + s
}

// oldBeginHeader is those releases' record.BeginHeader: the header before
// its times and generation, and the header from its identity tag on.
func oldBeginHeader(version byte, owner, tool, idTag, sha string, requestLen int64) (head, tail string) {
	head = string(version) + "PU0" + oldNum(0, oldWidthLen) + oldNum(0, oldWidthLen) + record.NoCompletion +
		strings.Repeat(" ", oldWidthCode)
	tail = idTag + oldNum(requestLen, oldWidthLen) + record.StoreDigest(sha) + record.StoreOwner(owner) + " " + tool
	return head, tail
}

// oldSegment is those releases' record.Segment: status, evidence and
// overflow letters, the lengths, the digest and the code.
func oldSegment(letters string, rawLen, resultLen int64, digest, code string) string {
	return letters + oldNum(rawLen, oldWidthLen) + oldNum(resultLen, oldWidthLen) + digest + code +
		strings.Repeat(" ", oldWidthCode-len(code))
}

// outcome runs one of the release's scripts and returns its outcome (the
// reply's first element); a Lua error fails the test.
func (o *oldRelease) outcome(t *testing.T, script string, keys, args []string) string {
	t.Helper()
	arr, err := o.scripts[script].Exec(context.Background(), o.c, keys, args).ToArray()
	if err != nil {
		t.Fatalf("%s %s: %v", o.name, script, err)
	}
	out, _ := arr[0].ToString()
	return out
}

func (o *oldRelease) beginCall(t *testing.T, run, id, owner, principal string, ttl time.Duration) string {
	t.Helper()
	k, a := o.begin(o, run, id, owner, principal, []byte(`{"q":"`+id+`"}`), ttl)
	return o.outcome(t, "begin", k, a)
}

func (o *oldRelease) completeCall(t *testing.T, run, id, owner string) string {
	t.Helper()
	k, a := o.complete(o, run, id, owner, []byte(`{"raw":"`+id+`"}`), []byte(`{"result":"`+id+`"}`))
	return o.outcome(t, "complete", k, a)
}

// keysOf returns every key of the run with its value as DUMP gives it.
func keysOf(t *testing.T, c rueidis.Client, keys canonical.Keys, run string, ids ...string) map[string]string {
	t.Helper()
	old := oldKeys{keys}
	names := []string{keys.Run(run), keys.Calls(run), keys.Live(run), old.index(run), old.leases(run)}
	for _, id := range ids {
		names = append(names, keys.Record(run, id))
	}
	out := map[string]string{}
	for _, k := range names {
		v, err := c.Do(context.Background(), c.B().Dump().Key(k).Build()).ToString()
		if err == nil {
			out[k] = v
		}
	}
	return out
}

func sameKeys(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d keys, were %d", what, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s changed %s", what, k)
		}
	}
}

// Runs and records written by the previous releases meet this release's
// store: every call is refused with LAYOUT_MISMATCH (never a Lua error,
// never STORE_UNAVAILABLE), nothing of theirs is written over, and the old
// release's own workers go on with them. Runs this release writes meet the
// old releases' scripts: refused (as lost, or the id taken), nothing
// written. The documented procedures hold: after a drain the run id is new
// to this release; beside it, a new prefix is a store of its own.
func TestUpgradeFromEarlierReleases(t *testing.T) {
	for _, topo := range []struct {
		name  string
		addrs func(t *testing.T) []string
	}{
		{"standalone", func(t *testing.T) []string { return []string{redistest.Addr(t)} }},
		{"cluster", func(t *testing.T) []string { return redistest.ClusterAddrs(t) }},
	} {
		t.Run(topo.name, func(t *testing.T) {
			addrs := topo.addrs(t)
			for _, rel := range []string{"2d181f9", "43f4dfc", "42f06c5", "8606eb8"} {
				t.Run(rel, func(t *testing.T) { upgradeFrom(t, addrs, rel) })
			}
		})
	}
}

func upgradeFrom(t *testing.T, addrs []string, rel string) {
	ctx := context.Background()
	prefix := "tcup" + canonical.NewOwner()[:6]
	keys, err := canonical.NewKeys(prefix)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	old := loadRelease(t, rel, c, keys)
	s := open(t, redisstore.Options{Addrs: addrs, Prefix: prefix})

	// An old worker's run: c1 done, c2 in flight (its lease passed).
	run := "up-" + canonical.NewOwner()[:8]
	if got := old.beginCall(t, run, "c1", "o1", "alice", time.Hour); got != "OK" {
		t.Fatalf("old begin: %s", got)
	}
	if got := old.completeCall(t, run, "c1", "o1"); got != "OK" {
		t.Fatalf("old complete: %s", got)
	}
	k, a := old.begin(old, run, "c2", "o2", "alice", []byte(`{"q":"c2"}`), time.Hour)
	a[6] = "1" // 2d181f9: lease_ms; 43f4dfc: request_3 is empty, set below
	if rel != "2d181f9" {
		a[6], a[8] = "", "1"
	}
	if got := old.outcome(t, "begin", k, a); got != "OK" {
		t.Fatalf("old begin c2: %s", got)
	}
	time.Sleep(5 * time.Millisecond)
	before := keysOf(t, c, keys, run, "c1", "c2", "c3")

	layout := func(what string, err error) {
		t.Helper()
		if canonical.CodeOf(err) != canonical.CodeLayoutMismatch {
			t.Fatalf("%s on %s's run: %v, want LAYOUT_MISMATCH", what, rel, err)
		}
	}
	for _, id := range []string{"c1", "c2", "c3"} { // done, in flight, new: none runs again, none is counted
		req := begin(run, id)
		req.Principal = "alice"
		_, err := s.Begin(ctx, req)
		layout("begin "+id, err)
	}
	_, err = s.Complete(ctx, canonical.Completion{RunID: run, ToolCallID: "c2", Owner: "o2", Status: canonical.StatusError,
		Code: canonical.CodeExecutionFailed})
	layout("complete", err)
	_, err = s.Abandon(ctx, run, "c2")
	layout("abandon", err)
	layout("close", s.CloseRun(ctx, run, "alice"))
	_, err = s.ObserveProgress(ctx, run, "alice", false, 3)
	layout("progress", err)
	layout("check", s.CheckPrincipal(ctx, run, "alice"))
	_, err = s.ReadUsage(ctx, run, "alice")
	layout("usage", err)
	_, err = s.ReadIndex(ctx, run, "alice", 10)
	layout("index", err)
	_, err = s.AwaitInput(ctx, canonical.AwaitInput{RunID: run, ToolCallID: "c2", Owner: "o2", Token: canonical.NewOwner(),
		Wait: time.Minute})
	layout("await input", err)
	_, err = s.ContinueCall(ctx, canonical.ContinueCall{RunID: run, ToolCallID: "c2", Owner: canonical.NewOwner(),
		Principal: "alice", RequestDigest: canonical.RequestDigest([]byte(`{"q":"c2"}`)), Token: canonical.NewOwner(),
		Lease: time.Minute})
	layout("continue", err)
	_, err = s.Get(ctx, run, "c1")
	layout("get", err)
	// This release's reaper leaves the old call to the old reaper.
	if rep, err := s.Reap(ctx, canonical.ReapOptions{}); err != nil || len(rep.Abandoned) != 0 {
		t.Fatalf("reap over %s's run: %+v, %v", rel, rep, err)
	}
	sameKeys(t, "this release's refusals", keysOf(t, c, keys, run, "c1", "c2", "c3"), before)
	// The old release's own worker finishes its call.
	if got := old.completeCall(t, run, "c2", "o2"); got != "OK" {
		t.Fatalf("the old worker's complete after the new one's refusals: %s", got)
	}

	// A run of this release meets the old release's scripts.
	fresh := "new-" + canonical.NewOwner()[:8]
	for _, id := range []string{"c1", "c2"} {
		req := begin(fresh, id)
		req.Principal = "bob"
		if _, err := s.Begin(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Complete(ctx, readyFor(fresh, "c1")); err != nil {
		t.Fatal(err)
	}
	usage, err := s.Usage(ctx, fresh)
	if err != nil {
		t.Fatal(err)
	}
	mine := keysOf(t, c, keys, fresh, "c1", "c2", "c3")
	for _, id := range []string{"c1", "c2", "c3"} {
		got := old.beginCall(t, fresh, id, "o-old-"+id, "bob", time.Hour)
		if got == "OK" || got == "EXISTS" {
			t.Fatalf("%s's begin of %s on this release's run: %s", rel, id, got)
		}
	}
	if got := old.completeCall(t, fresh, "c2", "o-old-c2"); got == "OK" || got == "EXISTS" {
		t.Fatalf("%s's complete on this release's run: %s", rel, got)
	}
	if _, ok := old.scripts["await_input"]; ok { // a waiting call of this release is not the old release's to take
		owner := record.StoreOwner(begin(fresh, "c2").Owner)
		if got := old.outcome(t, "await_input", []string{keys.Record(fresh, "c2"), oldKeys{keys}.leases(fresh), keys.Run(fresh),
			keys.RunSlotIndex(fresh, canonical.SlotDue)}, []string{"c2", owner + " ", "tok", "", "60000", fresh}); got != "LAYOUT_MISMATCH" {
			t.Fatalf("%s's await input on this release's call: %s", rel, got)
		}
		if got := old.outcome(t, "continue_call", []string{keys.Record(fresh, "c2"), keys.Run(fresh), oldKeys{keys}.leases(fresh),
			keys.RunSlotIndex(fresh, canonical.SlotDue)}, []string{"c2", "o-old", canonical.PrincipalTag("bob"),
			record.StoreDigest(canonical.RequestDigest([]byte(`{"q":"c2"}`))), "tok", "60000", fresh}); got != "LAYOUT_MISMATCH" {
			t.Fatalf("%s's continue on this release's call: %s", rel, got)
		}
	}
	sameKeys(t, rel+"'s refusals", keysOf(t, c, keys, fresh, "c1", "c2", "c3"), mine)
	if u, err := s.Usage(ctx, fresh); err != nil || u.Calls != usage.Calls || u.Bytes != usage.Bytes || u.Lost {
		t.Fatalf("usage after %s's calls: %+v, %v; was %+v", rel, u, err, usage)
	}
	// bob's run is still bob's, and goes on.
	if err := s.CheckPrincipal(ctx, fresh, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, readyFor(fresh, "c2")); err != nil {
		t.Fatal(err)
	}

	// Side by side: a new prefix is a store of its own.
	side := open(t, redisstore.Options{Addrs: addrs, Prefix: prefix + "n"})
	req := begin(run, "c1")
	req.Principal = "alice"
	if _, err := side.Begin(ctx, req); err != nil {
		t.Fatalf("begin under a new prefix: %v", err)
	}
	// Drained: once the old run's keys expired, the id is a new run.
	drained := "drain-" + canonical.NewOwner()[:8]
	if got := old.beginCall(t, drained, "c1", "o1", "alice", 200*time.Millisecond); got != "OK" {
		t.Fatalf("old begin: %s", got)
	}
	time.Sleep(300 * time.Millisecond)
	req = begin(drained, "c1")
	req.Principal = "alice"
	if _, err := s.Begin(ctx, req); err != nil {
		t.Fatalf("begin after the old run expired: %v", err)
	}
}

// The README's Upgrading section names this release's layout, the code of
// a mismatch and the procedures the test above runs.
func TestReadmeTellsHowToUpgrade(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Upgrading\n")
	if !ok {
		t.Fatal("the README has no Upgrading section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, want := range []string{
		"layout " + string(rune(record.Version)), "header's first byte is `" + string(rune(record.Version)) + "`",
		"`" + record.RunLayoutField + "` starts with\n`" + record.RunLayout + "`", "`LAYOUT_MISMATCH`", "`RUN_INACTIVE`",
		"**Drain.**", "**A new prefix side by side.**", "**A mixed fleet, briefly.**", "test/upgrade_test.go",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("the Upgrading section does not say %q", want)
		}
	}
}
