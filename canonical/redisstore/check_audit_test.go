package redisstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// doctor says how far the audit export is behind: nothing where no store
// of the server records events, a warning where one does and no pass ran,
// the lag of the last pass, a warning past AuditLagWarning.
func TestCheckReportsAuditLag(t *testing.T) {
	addr := redistest.Addr(t)
	prefix := "ck" + canonical.NewOwner()[:8]
	finding := func(s *redisstore.Store) (redisstore.Finding, bool) {
		t.Helper()
		rep, err := s.Check(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range rep.Findings {
			if f.Setting == "audit export" {
				return f, true
			}
		}
		return redisstore.Finding{}, false
	}
	plain, err := redisstore.New(redisstore.Options{Addrs: []string{addr}, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if f, ok := finding(plain); ok {
		t.Fatalf("a store without audit, never exported: %+v", f)
	}
	o := canonical.AuditOptions{Key: make([]byte, 32), KeyID: "ck"}
	audited, err := redisstore.New(redisstore.Options{Addrs: []string{addr}, Prefix: prefix, Audit: &o})
	if err != nil {
		t.Fatal(err)
	}
	defer audited.Close()
	if f, ok := finding(audited); !ok || f.Level != redisstore.LevelWarn || f.Value != "never" {
		t.Fatalf("audit on, never exported: %+v %v", f, ok)
	}
	now := time.Now()
	audited.AuditReport(context.Background(), canonical.AuditStatus{LastPass: now.Add(-5 * time.Second), Exported: 9})
	if f, ok := finding(plain); !ok || f.Level != redisstore.LevelOK || !strings.HasPrefix(f.Value, "lag 5s") {
		t.Fatalf("after a pass: %+v %v", f, ok)
	}
	audited.AuditReport(context.Background(), canonical.AuditStatus{LastPass: now, Pending: 40,
		OldestEvent: now.Add(-redisstore.AuditLagWarning - time.Minute)})
	if f, ok := finding(plain); !ok || f.Level != redisstore.LevelWarn || !strings.Contains(f.Value, "40 pending") {
		t.Fatalf("far behind: %+v %v", f, ok)
	}
}

// The export's status is written with its expiry in one command, so that
// it never stands without one (a connection lost between a write and its
// PEXPIRE would leave it so), and reads back as written.
func TestAuditStatusIsWrittenWithItsExpiry(t *testing.T) {
	s, cc, addr := countedStore(t)
	ctx := context.Background()
	if st, err := s.AuditStatus(ctx); err != nil || st != (canonical.AuditStatus{}) {
		t.Fatalf("no status yet: %+v, %v", st, err)
	}
	want := canonical.AuditStatus{LastPass: time.UnixMilli(1796321576928), Exported: 9, Pending: 40,
		OldestEvent: time.UnixMilli(1796321570000)}
	cc.reset()
	if err := s.AuditReport(ctx, want); err != nil {
		t.Fatal(err)
	}
	if trips, names := cc.reset(); trips != 1 || len(names) != 1 || names["SET"] != 1 {
		t.Errorf("a report sent %d round trips, %v: want one SET", trips, names)
	}
	keys, err := redistest.Command(addr, "KEYS", "*:audit:*")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range strings.Fields(keys) {
		if pttl, _ := redistest.Command(addr, "PTTL", k); strings.TrimSpace(pttl) == "-1" {
			t.Errorf("%s has no expiry", k)
		}
	}
	if got, err := s.AuditStatus(ctx); err != nil || !got.LastPass.Equal(want.LastPass) || !got.OldestEvent.Equal(want.OldestEvent) ||
		got.Exported != want.Exported || got.Pending != want.Pending {
		t.Errorf("read back %+v, %v; want %+v", got, err, want)
	}
}
