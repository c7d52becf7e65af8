// Package container runs the servers of the test harness
// (internal/redistest) in containers through testcontainers-go, where a
// Docker engine answers and no server binary is there. It is a module of its
// own so that the root module needs no container library: a test binary
// that imports it for its side effect registers it with the harness.
package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/toolcanon/toolcanon/internal/redistest"
)

func init() { redistest.RegisterContainers(docker{}) }

// docker implements redistest.Containers with testcontainers-go.
type docker struct{}

// ctr implements redistest.Container.
type ctr struct{ c testcontainers.Container }

func (docker) Healthy() error { return dockerHealthy() }

func (docker) Run(image, command string, args []string) (redistest.Container, error) {
	c, err := startContainer(image, command, args)
	if err != nil {
		return nil, err
	}
	return ctr{c}, nil
}

func (c ctr) Stop() error          { return stopContainer(c.c) }
func (c ctr) Start() error         { return startAgain(c.c) }
func (c ctr) LogTail(n int) string { return containerLogTail(c.c, n) }
func (c ctr) Remove()              { removeContainer(c.c) }

// dockerHealthy reports whether a Docker engine answers, within a bound.
func dockerHealthy() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		return err
	}
	defer provider.Close()
	return provider.Health(ctx)
}

// startContainer runs command (the server) with args in a container of image on the
// host's network, so that a server (or a cluster node, whose peers and
// clients use the address it announces) listens on the same loopback port as
// a local binary would, and Kill and Restart work alike.
func startContainer(image, command string, args []string) (testcontainers.Container, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := tcredis.Run(ctx, image,
		testcontainers.WithCmd(append([]string{command}, args...)...),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.NetworkMode = "host"
		}),
		// On the host network no port is mapped: wait for the log line only;
		// run then waits for PING on the server's own port.
		testcontainers.WithWaitStrategy(wait.ForLog("Ready to accept connections").WithStartupTimeout(time.Minute)),
	)
	if err != nil {
		if c != nil {
			_ = c.Terminate(context.Background())
		}
		return nil, fmt.Errorf("%s container (%s): %w", command, image, err)
	}
	return c.Container, nil
}

// stopContainer stops the container abruptly, as a crash would.
func stopContainer(c testcontainers.Container) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zero := time.Duration(0)
	return c.Stop(ctx, &zero)
}

// startAgain starts a stopped container; its server comes back empty.
func startAgain(c testcontainers.Container) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return c.Start(ctx)
}

// containerLogTail returns at most n bytes of the end of the container's
// output, where its redis-server logs.
func containerLogTail(c testcontainers.Container, n int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Logs(ctx)
	if err != nil {
		return fmt.Sprintf("(no container log: %v)", err)
	}
	defer r.Close()
	b, _ := io.ReadAll(io.LimitReader(r, 64<<20))
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// removeContainer stops and removes the container.
func removeContainer(c testcontainers.Container) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Terminate(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "redistest: removing container %s: %v\n", c.GetContainerID(), err)
	}
}
