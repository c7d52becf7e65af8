package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// EnvImage and EnvValkeyImage name the images used when servers run in
// containers.
const (
	EnvImage       = "TOOLCANON_REDIS_IMAGE"
	EnvValkeyImage = "TOOLCANON_VALKEY_IMAGE"
)

// The container images when EnvImage and EnvValkeyImage are unset.
const (
	defaultImage       = "redis:7"
	defaultValkeyImage = "valkey/valkey:8"
)

// Containers starts servers in containers. The harness itself runs server
// binaries only, so that the tests of the root module need no container
// library; the module github.com/toolcanon/toolcanon/internal/redistest/container
// implements Containers with testcontainers-go and registers it when a test
// binary imports it (for its side effect).
type Containers interface {
	// Healthy returns nil when a container engine answers, within a bound.
	Healthy() error
	// Run starts command (the server) with args in a container of image on
	// the host's network, so that the server listens on the loopback port
	// its arguments give, as a local binary would.
	Run(image, command string, args []string) (Container, error)
}

// Container is a server that runs in a container.
type Container interface {
	Stop() error          // stops it abruptly, as a crash would
	Start() error         // starts it again after Stop; the server comes back empty
	LogTail(n int) string // at most n bytes of the end of its output
	Remove()              // stops and removes it
}

var registered Containers

// RegisterContainers makes the harness start servers with c where no server
// binary is there. It is meant to be called from an init function.
func RegisterContainers(c Containers) {
	backendMu.Lock()
	defer backendMu.Unlock()
	registered = c
}

// errNoContainers is what the Docker probe returns when no Containers is registered.
var errNoContainers = errors.New("no container support in this test binary (import github.com/toolcanon/toolcanon/internal/redistest/container)")

// dockerHealthy reports whether the registered Containers has an engine that answers.
// backendMu is held.
func dockerHealthy() error {
	if registered == nil {
		return errNoContainers
	}
	return registered.Healthy()
}

// startContainer runs a server in a container of the registered Containers.
func startContainer(image, command string, args []string) (Container, error) {
	backendMu.Lock()
	c := registered
	backendMu.Unlock()
	if c == nil {
		return nil, errNoContainers
	}
	return c.Run(image, command, args)
}

// backend says how the harness runs a server: a binary on this machine, or
// a container of a Docker engine.
type backend struct {
	kind   string // KindRedis or KindValkey: what the servers are
	binary string // path of the server binary; "" when servers run in containers
	cli    string // path of the matching command-line client, "" when none is there
	image  string // container image, when binary is ""
	note   string // one line telling the user about a fallback, "" when none was taken
}

// command is the server's executable name inside a container.
func (b backend) command() string {
	if b.kind == KindValkey {
		return "valkey-server"
	}
	return "redis-server"
}

// probes are what chooseBackend looks at; tests replace them.
type probes struct {
	binary func() (string, error)         // finds a redis-server binary
	valkey func() (valkeyBinaries, error) // finds or builds valkey-server
	docker func() error                   // nil when a Docker engine answers
	image  func(kind string) string       // the container image for a kind of server
}

var (
	backendMu  sync.Mutex
	chosen     *backend
	chosenErr  error
	realProbes = probes{
		binary: func() (string, error) { return binary("redis-server") },
		valkey: valkeyBinary,
		docker: dockerHealthy,
		image: func(kind string) string {
			if kind == KindValkey {
				if img := os.Getenv(EnvValkeyImage); img != "" {
					return img
				}
				return defaultValkeyImage
			}
			if img := os.Getenv(EnvImage); img != "" {
				return img
			}
			return defaultImage
		},
	}
)

// serverBackend returns how this process runs servers, deciding once, and
// prints the choice's note (a fallback) in one line on standard error.
func serverBackend() (backend, error) {
	backendMu.Lock()
	defer backendMu.Unlock()
	if chosen == nil && chosenErr == nil {
		var b backend
		b, chosenErr = chooseBackend(realProbes, os.Getenv(EnvServer))
		if chosenErr == nil {
			chosen = &b
			if b.note != "" {
				fmt.Fprintln(os.Stderr, b.note)
			}
		}
	}
	if chosenErr != nil {
		return backend{}, chosenErr
	}
	return *chosen, nil
}

// chooseBackend decides what the tests run on. For want KindRedis (or ""):
// a redis-server binary, else Valkey (TOOLCANON_VALKEY_SERVER, or built from
// the vendored source, which needs make and a C compiler), else a redis
// container where a Docker engine answers. For want KindValkey: Valkey, else
// a Valkey container. When nothing works, the error names every way to give
// the tests a server (the addresses of servers one runs come first, but
// they are read before a server is started, by Addr and ClusterAddrs).
func chooseBackend(p probes, want string) (backend, error) {
	var binErr error
	switch want {
	case "", KindRedis:
		var bin string
		if bin, binErr = p.binary(); binErr == nil {
			cli, _ := exec.LookPath("redis-cli")
			return backend{kind: KindRedis, binary: bin, cli: cli}, nil
		}
	case KindValkey:
	default:
		return backend{}, fmt.Errorf("%s=%q: want %q or %q", EnvServer, want, KindRedis, KindValkey)
	}
	vk, vkErr := p.valkey()
	if vkErr == nil {
		b := backend{kind: KindValkey, binary: vk.server, cli: vk.cli}
		if want != KindValkey {
			b.note = fmt.Sprintf("redistest: no redis-server on PATH: every Redis test runs on valkey-server %s (%s)", valkeyVersion, vk.server)
		}
		return b, nil
	}
	kind := KindRedis
	if want == KindValkey {
		kind = KindValkey
	}
	dockerErr := p.docker()
	if dockerErr == nil {
		return backend{kind: kind, image: p.image(kind)}, nil
	}
	seen := fmt.Sprintf("Seen: valkey-server: %v; Docker: %v", vkErr, dockerErr)
	if binErr != nil {
		seen = fmt.Sprintf("Seen: redis-server: %v; valkey-server: %v; Docker: %v", binErr, vkErr, dockerErr)
	}
	return backend{}, fmt.Errorf("no %s server for the tests. Give them one of: "+
		"(1) servers you run: %s=host:port, and %s=host:port,... for a cluster; "+
		"(2) a redis-server binary on PATH (Debian: apt-get install -y redis-server); "+
		"(3) make and a C compiler, with which the harness builds Valkey from third_party/valkey once (or %s=/path/to/valkey-server); "+
		"(4) a running Docker engine, where the harness starts %s containers through testcontainers-go, imported from the module internal/redistest/container (image from %s). %s",
		kind, EnvAddr, EnvClusterAddrs, EnvValkeyServer, p.image(kind), imageEnv(kind), strings.ReplaceAll(seen, "\n", " "))
}

// imageEnv names the variable that sets the image of a kind of server.
func imageEnv(kind string) string {
	if kind == KindValkey {
		return EnvValkeyImage
	}
	return EnvImage
}

// valkeyBinary finds valkey-server: TOOLCANON_VALKEY_SERVER, else the
// harness's build of the vendored source. Either must say it is Valkey.
func valkeyBinary() (valkeyBinaries, error) {
	var b valkeyBinaries
	if p := os.Getenv(EnvValkeyServer); p != "" {
		b.server = p
		if cli := filepath.Join(filepath.Dir(p), "valkey-cli"); cached(valkeyBinaries{server: p, cli: cli}) {
			b.cli = cli
		} else if cli, err := exec.LookPath("valkey-cli"); err == nil {
			b.cli = cli
		}
	} else {
		var err error
		if b, err = valkeyBuilt(); err != nil {
			return valkeyBinaries{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, b.server, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "Valkey server v=") {
		return valkeyBinaries{}, fmt.Errorf("%s --version: %q, %v: not a valkey-server", b.server, strings.TrimSpace(string(out)), err)
	}
	return b, nil
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
