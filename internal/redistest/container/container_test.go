package container

import (
	"strconv"
	"testing"

	"github.com/toolcanon/toolcanon/internal/redistest"
)

// Where a Docker engine answers, a server runs in a container of the
// harness's image on the host's network and answers PING on its port; where
// none does, starting one fails with an error (and the harness, which asks
// Healthy first, never tries).
func TestServerInAContainer(t *testing.T) {
	if err := (docker{}).Healthy(); err != nil {
		c, err2 := (docker{}).Run("redis:7", "redis-server", []string{"--port", "46379"})
		if err2 == nil {
			c.Remove()
			t.Fatalf("no Docker engine answers (%v), yet a container started", err)
		}
		t.Logf("no Docker engine answers (%v); starting a container fails: %v", err, err2)
		return
	}
	port := 46379
	c, err := (docker{}).Run("redis:7", "redis-server", []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", ""})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Remove()
	if reply, err := redistest.Command("127.0.0.1:"+strconv.Itoa(port), "PING"); err != nil || reply != "PONG" {
		t.Fatalf("PING: %q, %v\n%s", reply, err, c.LogTail(2000))
	}
}
