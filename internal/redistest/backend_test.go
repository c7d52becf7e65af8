package redistest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestChooseBackendOrder(t *testing.T) {
	noBinary := func() (string, error) { return "", errors.New("redis-server not found on PATH") }
	binaryAt := func() (string, error) { return "/usr/bin/redis-server", nil }
	noValkey := func() (valkeyBinaries, error) { return valkeyBinaries{}, errors.New("needs make and cc on PATH") }
	valkeyAt := func() (valkeyBinaries, error) {
		return valkeyBinaries{server: "/cache/bin/valkey-server", cli: "/cache/bin/valkey-cli"}, nil
	}
	noDocker := func() error { return errors.New("cannot connect to the Docker daemon") }
	image := func(kind string) string { return kind + ":test" }

	t.Run("a redis-server binary wins and nothing else is asked", func(t *testing.T) {
		asked := false
		b, err := chooseBackend(probes{binary: binaryAt,
			valkey: func() (valkeyBinaries, error) { asked = true; return valkeyAt() },
			docker: func() error { asked = true; return nil }, image: image}, "")
		if err != nil || b.kind != KindRedis || b.binary != "/usr/bin/redis-server" || b.image != "" || b.note != "" {
			t.Fatalf("got %+v, %v", b, err)
		}
		if asked {
			t.Fatal("Valkey or Docker was probed although a redis-server binary was there")
		}
	})
	t.Run("no redis-server: Valkey, said in one line", func(t *testing.T) {
		b, err := chooseBackend(probes{binary: noBinary, valkey: valkeyAt, docker: func() error { return nil }, image: image}, KindRedis)
		if err != nil || b.kind != KindValkey || b.binary != "/cache/bin/valkey-server" || b.cli != "/cache/bin/valkey-cli" {
			t.Fatalf("got %+v, %v", b, err)
		}
		if !strings.Contains(b.note, "no redis-server on PATH") || !strings.Contains(b.note, "valkey-server 8.0.1") ||
			strings.Contains(b.note, "\n") {
			t.Fatalf("note %q does not say in one line that Valkey runs the Redis tests", b.note)
		}
	})
	t.Run("no redis-server, no Valkey: a redis container where Docker answers", func(t *testing.T) {
		b, err := chooseBackend(probes{binary: noBinary, valkey: noValkey, docker: func() error { return nil }, image: image}, "")
		if err != nil || b.kind != KindRedis || b.binary != "" || b.image != "redis:test" || b.command() != "redis-server" {
			t.Fatalf("got %+v, %v", b, err)
		}
	})
	t.Run("Valkey asked: never redis-server", func(t *testing.T) {
		b, err := chooseBackend(probes{binary: binaryAt, valkey: valkeyAt, docker: noDocker, image: image}, KindValkey)
		if err != nil || b.kind != KindValkey || b.binary != "/cache/bin/valkey-server" || b.note != "" {
			t.Fatalf("got %+v, %v", b, err)
		}
		b, err = chooseBackend(probes{binary: binaryAt, valkey: noValkey, docker: func() error { return nil }, image: image}, KindValkey)
		if err != nil || b.kind != KindValkey || b.image != "valkey:test" || b.command() != "valkey-server" {
			t.Fatalf("no Valkey binary, Docker: got %+v, %v", b, err)
		}
	})
	t.Run("an unknown kind is refused", func(t *testing.T) {
		if _, err := chooseBackend(probes{binary: binaryAt, valkey: valkeyAt, docker: noDocker, image: image}, "keydb"); err == nil ||
			!strings.Contains(err.Error(), EnvServer) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("nothing: one message naming the four ways and what was seen", func(t *testing.T) {
		_, err := chooseBackend(probes{binary: noBinary, valkey: noValkey, docker: noDocker, image: image}, "")
		if err == nil {
			t.Fatal("no error without a binary, a toolchain or a Docker engine")
		}
		msg := err.Error()
		for _, want := range []string{
			EnvAddr, EnvClusterAddrs, // (1) servers one runs
			"apt-get install -y redis-server",                   // (2) the binary
			"third_party/valkey", EnvValkeyServer, "C compiler", // (3) Valkey
			"Docker engine", "testcontainers-go", "redis:test", EnvImage, // (4) containers
			"redis-server not found on PATH", "needs make and cc", "cannot connect to the Docker daemon", // what was seen
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("message lacks %q:\n%s", want, msg)
			}
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("the message is one line:\n%s", msg)
		}
	})
}

func TestContainerArgsKeepTheServerFlags(t *testing.T) {
	in := []string{"--port", "7001", "--bind", "127.0.0.1", "--dir", "/tmp/x", "--save", "", "--appendonly", "no",
		"--logfile", "/tmp/x/redis.log", "--cluster-enabled", "yes"}
	want := []string{"--port", "7001", "--bind", "127.0.0.1", "--dir", "/data", "--save", "", "--appendonly", "no",
		"--cluster-enabled", "yes"}
	if got := containerArgs(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("containerArgs:\n got %q\nwant %q", got, want)
	}
}

// On this package's machine the choice is made for real: the test fails
// (never skips) when no way to run Redis is there.
func TestServerBackendIsChosen(t *testing.T) {
	b, err := serverBackend()
	if err != nil {
		t.Fatal(err)
	}
	if b.binary == "" && b.image == "" {
		t.Fatalf("backend %+v names neither a binary nor an image", b)
	}
	t.Logf("%s servers run from: binary %q, image %q", b.kind, b.binary, b.image)
}

// The harness runs containers only through a registered Containers, so that
// the root module needs no container library; without one, the Docker probe
// says which module to import.
func TestWithoutContainersTheProbeNamesTheModule(t *testing.T) {
	backendMu.Lock()
	saved := registered
	registered = nil
	err := dockerHealthy()
	registered = saved
	backendMu.Unlock()
	if err == nil || !strings.Contains(err.Error(), "github.com/toolcanon/toolcanon/internal/redistest/container") {
		t.Fatalf("Docker probe without registered containers: %v", err)
	}
	if _, err := startContainer("redis:test", "redis-server", nil); err == nil && saved == nil {
		t.Fatal("a container started with no Containers registered")
	}
}
