package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// keyWatch passes every command to a real client and notes the KEYS and
// ARGV of each EVALSHA (an EVAL follows it when the server did not know the
// script).
type keyWatch struct {
	rueidis.Client
	mu         sync.Mutex
	keys, args [][]string
}

func (w *keyWatch) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if c := cmd.Commands(); c[0] == "EVALSHA" {
		n, _ := strconv.Atoi(c[2])
		w.mu.Lock()
		w.keys = append(w.keys, slices.Clone(c[3:3+n]))
		w.args = append(w.args, slices.Clone(c[3+n:]))
		w.mu.Unlock()
	}
	return w.Client.Do(ctx, cmd)
}

// With audit off, the scripts of a lifecycle, an abandon and a close are
// sent without the audit stream's keys (a string each the server makes for
// KEYS, and bytes on the wire), and complete and abandon without a new
// generation; with audit on, with them.
func TestScriptsSendNoAuditKeysWithAuditOff(t *testing.T) {
	addr := redistest.Addr(t)
	for _, audit := range []bool{false, true} {
		t.Run(fmt.Sprintf("audit=%v", audit), func(t *testing.T) {
			c, err := rueidis.NewClient(redisstore.Options{Addrs: []string{addr}}.ClientOption())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			w := &keyWatch{Client: c}
			opts := redisstore.Options{Client: w, Prefix: fmt.Sprintf("keys%d%v", time.Now().UnixNano(), audit)}
			if audit {
				opts.Audit = &canonical.AuditOptions{Key: make([]byte, 32), KeyID: "k"}
			}
			s, err := redisstore.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			begin := func(id string) {
				t.Helper()
				if _, err := s.Begin(ctx, canonical.BeginRequest{RunID: "run", ToolCallID: id, Tool: "t", Owner: "o",
					Principal: "p", Request: []byte(`{}`), TTL: time.Minute, Lease: time.Millisecond}); err != nil {
					t.Fatal(err)
				}
			}
			begin("a")
			if _, err := s.Complete(ctx, canonical.Completion{RunID: "run", ToolCallID: "a", Owner: "o",
				Status: canonical.StatusReady, Evidence: canonical.EvidenceFound, Raw: []byte(`{}`), Result: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			begin("b")
			time.Sleep(5 * time.Millisecond)
			if _, err := s.Abandon(ctx, "run", "b"); err != nil {
				t.Fatal(err)
			}
			if err := s.CloseRun(ctx, "run", "p"); err != nil {
				t.Fatal(err)
			}
			// begin, complete, begin, abandon, close_run
			want := []int{5, 3, 5, 3, 2}
			if audit {
				want = []int{8, 6, 8, 6, 5}
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			var got []int
			for _, k := range w.keys {
				got = append(got, len(k))
				for _, key := range k {
					if !audit && strings.Contains(key, ":audit") {
						t.Errorf("audit off, yet a script names %s", key)
					}
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("keys per script: %v, want %v (%q)", got, want, w.keys)
			}
			// The generation complete and abandon offer a lost state's
			// audit stream (their last argument): a random read per call,
			// made only with audit on.
			for _, i := range []int{1, 3} {
				if g := w.args[i][len(w.args[i])-1]; (g != "") != audit {
					t.Errorf("script %d offers generation %q with audit %v", i, g, audit)
				}
			}
		})
	}
}

// A Begin with the limits its run began with, some of them zero, joins the
// run: begin.lua compares the caller's limits one by one only when neither
// they nor the caller's defaulted limits are the run's. A non-zero limit
// that differs is refused either way.
func TestBeginComparesLimitsOnlyWhenTheyDiffer(t *testing.T) {
	s := newStore(t, []string{redistest.Addr(t)}, redisstore.Options{Prefix: fmt.Sprintf("lim%d", time.Now().UnixNano())})
	ctx := context.Background()
	begin := func(id string, lim canonical.Limits) error {
		_, err := s.Begin(ctx, canonical.BeginRequest{RunID: "run", ToolCallID: id, Tool: "t", Owner: "o",
			Request: []byte(`{}`), TTL: time.Minute, Limits: lim})
		return err
	}
	partial := canonical.Limits{MaxCallsPerRun: 5, MaxRunBytes: 4096}
	for i, c := range []struct {
		lim  canonical.Limits
		code canonical.Code
	}{
		{partial, ""},            // the run's first: its limits are partial's, defaulted
		{partial, ""},            // the same again: the defaulted limits are the run's
		{canonical.Limits{}, ""}, // none: the run's
		{canonical.Limits{MaxCallsPerRun: 5}, ""}, // some of the run's, compared one by one
		{partial.WithDefaults(), ""},              // all of the run's
		{canonical.Limits{MaxCallsPerRun: 6}, canonical.CodeInvalidArgument},
		{canonical.Limits{MaxCallsPerRun: 5, MaxRunBytes: 4097}, canonical.CodeInvalidArgument},
	} {
		if err := begin(fmt.Sprint("c", i), c.lim); canonical.CodeOf(err) != c.code {
			t.Errorf("begin %d with %+v: %v, want %q", i, c.lim, err, c.code)
		}
	}
}
