package redisstore_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/internal/redistest"
)

// pipeWatch passes every command to a real client and notes, per script
// command, whether the store marked it for the shared pipeline. It can
// hold the next script command before sending it, to have one waiting.
type pipeWatch struct {
	rueidis.Client
	mu    sync.Mutex
	piped []bool
	// A token in hold holds the next script command: it closes held and
	// waits for release before it is sent.
	hold, held, release chan struct{}
}

func (w *pipeWatch) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if c := cmd.Commands(); strings.HasPrefix(c[0], "EVAL") {
		w.mu.Lock()
		w.piped = append(w.piped, cmd.IsPipe())
		w.mu.Unlock()
		select {
		case <-w.hold:
			close(w.held)
			<-w.release
		default:
		}
	}
	return w.Client.Do(ctx, cmd)
}

func (w *pipeWatch) marks() []bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]bool(nil), w.piped...)
}

// A lone call's script goes on a connection of its own; one sent while
// another is waiting joins the shared pipeline.
func TestOnlyConcurrentCommandsArePipelined(t *testing.T) {
	addr := redistest.Addr(t)
	c, err := rueidis.NewClient(redisstore.Options{Addrs: []string{addr}}.ClientOption())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := &pipeWatch{Client: c, hold: make(chan struct{}, 1), held: make(chan struct{}), release: make(chan struct{})}
	s, err := redisstore.New(redisstore.Options{Client: w})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := "pipe-" + canonical.NewOwner()[:8]
	begin := func(id string) error {
		_, err := s.Begin(ctx, canonical.BeginRequest{RunID: run, ToolCallID: id, Tool: "t", Owner: canonical.NewOwner(),
			Request: []byte(`{}`), TTL: time.Minute})
		return err
	}
	if err := begin("alone"); err != nil {
		t.Fatal(err)
	}
	// The first Begin is held in the client; the second is sent meanwhile.
	w.hold <- struct{}{}
	done := make(chan error)
	go func() { done <- begin("first") }()
	<-w.held
	if err := begin("second"); err != nil {
		t.Fatal(err)
	}
	close(w.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := begin("alone-again"); err != nil {
		t.Fatal(err)
	}
	// A fresh server answers the first EVALSHA NOSCRIPT and gets the EVAL:
	// look at the last command of each call.
	got := w.marks()
	if n := len(got); n < 4 || got[n-4] || got[n-3] || !got[n-2] || got[n-1] {
		t.Fatalf("piped marks of the script commands %v: want the alone, first, second, alone-again calls to end false, false, true, false", got)
	}
}
