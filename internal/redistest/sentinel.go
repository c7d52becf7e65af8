package redistest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// StartSentinel starts a Redis Sentinel (the server binary in sentinel
// mode) on a free loopback port that watches master under the name
// masterSet, and waits until it knows the master. Only a server the binary
// runs can be watched: not one in a container.
func StartSentinel(master *Server, masterSet string) (*Server, error) {
	be, err := serverBackend()
	if err != nil {
		return nil, err
	}
	if be.binary == "" {
		return nil, errors.New("redistest: a sentinel needs the server binary; servers here run in containers")
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort(false)
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "toolcanon-sentinel-")
		if err != nil {
			return nil, err
		}
		// A sentinel rewrites its configuration file: it must be its own.
		conf := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\nsentinel monitor %s 127.0.0.1 %d 1\n"+
			"sentinel down-after-milliseconds %s 1000\nsentinel failover-timeout %s 5000\n",
			port, dir, filepath.Join(dir, "redis.log"), masterSet, master.Port, masterSet, masterSet)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, Kind: be.kind, dir: dir, bin: be.binary,
			args: []string{conf, "--sentinel"}}
		if err := s.run(); err != nil {
			lastErr = err
			os.RemoveAll(dir)
			continue
		}
		want := strconv.Itoa(master.Port)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			reply, err := Command(s.Addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", masterSet)
			if err == nil && strings.HasSuffix(reply, "\n"+want) {
				return s, nil
			}
			if time.Now().After(deadline) {
				s.Stop()
				return nil, fmt.Errorf("redistest: the sentinel on %s does not name the master %s: %q, %v", s.Addr, master.Addr, reply, err)
			}
		}
	}
	return nil, lastErr
}
