package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// EnvImage names the image used when Redis runs in a container.
const EnvImage = "TOOLCANON_REDIS_IMAGE"

var containers []*container

// container is a redis container started through the docker CLI, for
// machines that have a Docker engine but no redis-server binary. The CLI is
// used rather than a Go client library so that the module does not carry a
// container runtime's dependency tree for a fallback.
type container struct {
	id   string
	addr string
}

func startContainer() (*container, error) {
	docker, err := exec.LookPath("docker")
	if err != nil {
		return nil, err
	}
	if err := exec.Command(docker, "info").Run(); err != nil {
		return nil, fmt.Errorf("docker engine not reachable: %v", err)
	}
	image := os.Getenv(EnvImage)
	if image == "" {
		image = "redis:7"
	}
	out, err := exec.Command(docker, "run", "-d", "--rm", "-p", "127.0.0.1::6379", image,
		"redis-server", "--save", "", "--appendonly", "no").Output()
	if err != nil {
		return nil, fmt.Errorf("docker run %s: %v", image, err)
	}
	c := &container{id: strings.TrimSpace(string(out))}
	port, err := exec.Command(docker, "port", c.id, "6379/tcp").Output()
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("docker port: %v", err)
	}
	c.addr = strings.TrimSpace(strings.Split(string(port), "\n")[0])
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if reply, err := Command(c.addr, "PING"); err == nil && reply == "PONG" {
			return c, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.stop()
	return nil, fmt.Errorf("redis container on %s did not answer PING", c.addr)
}

func (c *container) stop() {
	_ = exec.Command("docker", "rm", "-f", c.id).Run()
}
