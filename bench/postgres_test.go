package bench_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolcanon/toolcanon/bench"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/pgtest"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// newPostgres returns the postgres row on a database of the test's own.
func newPostgres(t *testing.T, cfg bench.Config) (*bench.Postgres, string) {
	t.Helper()
	dsn := pgtest.Database(t)
	p, err := bench.NewPostgres(context.Background(), dsn, cfg, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, dsn
}

func begin(t *testing.T, impl bench.Impl, c bench.Call, request string) bool {
	t.Helper()
	ok, err := impl.Begin(context.Background(), c, []byte(request))
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func complete(t *testing.T, impl bench.Impl, c bench.Call, raw, result string) bool {
	t.Helper()
	ok, err := impl.Complete(context.Background(), c, []byte(raw), []byte(result))
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// The run row holds the budget: a duplicate is refused without counting, a
// call past the run's calls is refused, and so is a completion past its
// bytes, which leaves the record PROJECTING.
func TestPostgresBudget(t *testing.T) {
	cfg := newConfig("pgbudget")
	cfg.Limits = canonical.Limits{MaxCallsPerRun: 2, MaxCallsPerTool: 2, MaxRunBytes: 100}
	p, _ := newPostgres(t, cfg)
	calls := bench.NewCalls("pb")
	a, b, c := calls.Next(), calls.Next(), calls.Next()
	if !begin(t, p, a, `{"q":1}`) {
		t.Fatal("the first call was refused")
	}
	other := a
	other.Owner = "another invocation"
	if begin(t, p, other, `{"q":1}`) {
		t.Fatal("a second Begin of one id executed")
	}
	if !begin(t, p, b, `{"q":2}`) {
		t.Fatal("the second call was refused: the duplicate was counted")
	}
	if begin(t, p, c, `{"q":3}`) {
		t.Fatal("a third call ran on a run of two")
	}
	if complete(t, p, other, `{}`, `{}`) {
		t.Fatal("another owner completed the call")
	}
	if complete(t, p, a, string(make([]byte, 100)), `{}`) {
		t.Fatal("a completion past the run's bytes was made")
	}
	if raw, err := p.Raw(context.Background(), a); err != nil || raw != nil {
		t.Fatalf("after a refused completion the record holds raw %q (%v), want none", raw, err)
	}
	if !complete(t, p, a, `{"hits":[]}`, `{}`) || complete(t, p, a, `{"hits":[]}`, `{}`) {
		t.Fatal("a completion within the budget: want made once, then refused")
	}
	if raw, err := p.Raw(context.Background(), a); err != nil || string(raw) != `{"hits":[]}` {
		t.Fatalf("raw = %q, %v", raw, err)
	}
}

// An expired row is absent to every read and is taken over by a Begin of
// its id; Cleanup deletes what has expired, and only that.
func TestPostgresExpiry(t *testing.T) {
	cfg := newConfig("pgexpiry")
	cfg.TTL = 300 * time.Millisecond
	p, _ := newPostgres(t, cfg)
	ctx := context.Background()
	calls := bench.NewCalls("pe")
	cs := []bench.Call{calls.Next(), calls.Next(), calls.Next()}
	for _, c := range cs {
		if !begin(t, p, c, `{}`) {
			t.Fatal("refused")
		}
	}
	e, err := p.Expiry(ctx, cs[0])
	if err != nil {
		t.Fatal(err)
	}
	if left := time.UnixMilli(e.Lo).Sub(time.Now()); left <= 0 || left > cfg.TTL+time.Second {
		t.Fatalf("expires in %v, TTL %v", left, cfg.TTL)
	}
	if n, m, err := p.Cleanup(ctx, 2); err != nil || n != 0 || m != 0 {
		t.Fatalf("cleanup before anything expired: %d calls, %d runs, %v", n, m, err)
	}
	time.Sleep(cfg.TTL + 100*time.Millisecond)
	if _, err := p.Raw(ctx, cs[0]); !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("an expired record was read: %v", err)
	}
	if _, err := p.Expiry(ctx, cs[0]); !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("an expired record's expiry was read: %v", err)
	}
	if complete(t, p, cs[1], `{}`, `{}`) {
		t.Fatal("an expired record was completed")
	}
	if !begin(t, p, cs[0], `{}`) {
		t.Fatal("a Begin of an expired id was refused")
	}
	// Two expired calls, in batches of one; the run is alive again (the
	// take-over extended it), so it stays.
	if n, m, err := p.Cleanup(ctx, 1); err != nil || n != 2 || m != 0 {
		t.Fatalf("cleanup: %d calls, %d runs, %v; want 2, 0", n, m, err)
	}
	if !complete(t, p, cs[0], `{"x":1}`, `{}`) {
		t.Fatal("the taken-over call could not be completed")
	}
	time.Sleep(cfg.TTL + 100*time.Millisecond)
	if n, m, err := p.Cleanup(ctx, 10); err != nil || n != 1 || m != 1 {
		t.Fatalf("cleanup: %d calls, %d runs, %v; want 1, 1", n, m, err)
	}
}

// Close drops the row's schema, and two rows on one database keep apart.
func TestPostgresSchemas(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	a, err := bench.NewPostgres(ctx, dsn, newConfig("pg-a"), 2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bench.NewPostgres(ctx, dsn, newConfig("pg-b"), 2)
	if err != nil {
		t.Fatal(err)
	}
	c := bench.NewCalls("ps").Next()
	if !begin(t, a, c, `{}`) || !begin(t, b, c, `{}`) {
		t.Fatal("one id in two schemas was refused")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'bench\\_%'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d schemas left after Close (%v)", n, err)
	}
}

// The floor promises nothing: every Begin executes, every Complete wins,
// and its records have no expiry, which is why the comparison does not run
// the contention scenarios on it.
func TestFloorPromisesNothing(t *testing.T) {
	impl := newImpl(t, "floor", []string{redistest.Addr(t)})
	ctx := context.Background()
	calls := bench.NewCalls("fl")
	p := bench.DefaultPayload()
	d, err := bench.Duplicates(ctx, impl, calls, p.Request, 20)
	if err != nil || d.Executed != 20 {
		t.Fatalf("duplicates: %+v, %v; want 20 executed", d, err)
	}
	l, err := bench.LostUpdates(ctx, impl, calls, p, 8)
	if err != nil || l.Succeeded != 8 || !l.StoredByWinner {
		t.Fatalf("lost updates: %+v, %v; want 8 succeeded, a winner's data stored", l, err)
	}
	c := calls.Next()
	if err := bench.Lifecycle(ctx, impl, c, p); err != nil {
		t.Fatal(err)
	}
	if raw, err := impl.Raw(ctx, c); err != nil || string(raw) != string(p.Raw) {
		t.Fatalf("raw: %d bytes, %v", len(raw), err)
	}
	if _, err := impl.Expiry(ctx, c); !errors.Is(err, bench.ErrNoExpiry) {
		t.Fatalf("expiry: %v", err)
	}
}
