package bench

import (
	"context"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/internal/redistest"
)

// A pinger stopped at once has still sent one PING: a completion shorter
// than the time its goroutine takes to start is measured too.
func TestPingerStoppedAtOnceHasPinged(t *testing.T) {
	addr := redistest.Addr(t)
	for range 50 {
		p, err := startPinger(context.Background(), addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, n, _ := p.stop(); n < 1 {
			t.Fatalf("%d PINGs after stop", n)
		}
	}
}
