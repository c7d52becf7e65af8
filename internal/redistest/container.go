package redistest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
	"github.com/testcontainers/testcontainers-go/wait"
)

// EnvImage names the image used when Redis runs in a container.
const EnvImage = "TOOLCANON_REDIS_IMAGE"

// defaultImage is the container image when EnvImage is unset.
const defaultImage = "redis:7"

// backend says how the harness runs a redis-server: a binary on this
// machine, or a container of a Docker engine.
type backend struct {
	binary string // path of redis-server; "" when servers run in containers
	image  string // container image, when binary is ""
}

// probes are what chooseBackend looks at; tests replace them.
type probes struct {
	binary func() (string, error) // finds a redis-server binary
	docker func() error           // nil when a Docker engine answers
	image  func() string          // the container image to use
}

var (
	backendMu  sync.Mutex
	chosen     *backend
	chosenErr  error
	realProbes = probes{
		binary: func() (string, error) { return binary("redis-server") },
		docker: dockerHealthy,
		image: func() string {
			if img := os.Getenv(EnvImage); img != "" {
				return img
			}
			return defaultImage
		},
	}
)

// serverBackend returns how this process runs redis-server, deciding once.
func serverBackend() (backend, error) {
	backendMu.Lock()
	defer backendMu.Unlock()
	if chosen == nil && chosenErr == nil {
		var b backend
		b, chosenErr = chooseBackend(realProbes)
		if chosenErr == nil {
			chosen = &b
		}
	}
	if chosenErr != nil {
		return backend{}, chosenErr
	}
	return *chosen, nil
}

// chooseBackend prefers a redis-server binary, then a container where a
// Docker engine answers. With neither, the error names every way to give the
// tests a Redis (the addresses of servers one runs come first, but they are
// read before a server is started, by Addr and ClusterAddrs).
func chooseBackend(p probes) (backend, error) {
	bin, binErr := p.binary()
	if binErr == nil {
		return backend{binary: bin}, nil
	}
	dockerErr := p.docker()
	if dockerErr == nil {
		return backend{image: p.image()}, nil
	}
	return backend{}, fmt.Errorf("no Redis for the tests. Give them one of: "+
		"(1) servers you run: %s=host:port, and %s=host:port,... for a cluster; "+
		"(2) a redis-server binary on PATH (Debian: apt-get install -y redis-server); "+
		"(3) a running Docker engine, where the harness starts %s containers through testcontainers-go (image from %s). "+
		"Seen: redis-server: %v; Docker: %v",
		EnvAddr, EnvClusterAddrs, p.image(), EnvImage, binErr, dockerErr)
}

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

// startContainer runs redis-server with args in a container of image on the
// host's network, so that a server (or a cluster node, whose peers and
// clients use the address it announces) listens on the same loopback port as
// a local binary would, and Kill and Restart work alike.
func startContainer(image string, args []string) (testcontainers.Container, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := tcredis.Run(ctx, image,
		testcontainers.WithCmd(append([]string{"redis-server"}, args...)...),
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
		return nil, fmt.Errorf("redis container (%s): %w", image, err)
	}
	return c.Container, nil
}

// containerArgs adapts the harness's server arguments to a container: the
// data directory is the image's and the log goes to the container's output.
func containerArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--dir":
			out = append(out, "--dir", "/data")
			i++
		case "--logfile":
			i++
		default:
			out = append(out, args[i])
		}
	}
	return out
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
