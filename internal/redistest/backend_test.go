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
	noDocker := func() error { return errors.New("cannot connect to the Docker daemon") }
	image := func() string { return "redis:7.2" }

	t.Run("a binary wins and Docker is never asked", func(t *testing.T) {
		asked := false
		b, err := chooseBackend(probes{binary: binaryAt, docker: func() error { asked = true; return nil }, image: image})
		if err != nil || b.binary != "/usr/bin/redis-server" || b.image != "" {
			t.Fatalf("got %+v, %v", b, err)
		}
		if asked {
			t.Fatal("Docker was probed although a binary was there")
		}
	})
	t.Run("no binary: a container where Docker answers", func(t *testing.T) {
		b, err := chooseBackend(probes{binary: noBinary, docker: func() error { return nil }, image: image})
		if err != nil || b.binary != "" || b.image != "redis:7.2" {
			t.Fatalf("got %+v, %v", b, err)
		}
	})
	t.Run("neither: one message naming the three ways and what was seen", func(t *testing.T) {
		_, err := chooseBackend(probes{binary: noBinary, docker: noDocker, image: image})
		if err == nil {
			t.Fatal("no error without a binary or a Docker engine")
		}
		msg := err.Error()
		for _, want := range []string{
			EnvAddr, EnvClusterAddrs, // (1) servers one runs
			"apt-get install -y redis-server",                           // (2) the binary
			"Docker engine", "testcontainers-go", "redis:7.2", EnvImage, // (3) containers
			"redis-server not found on PATH", "cannot connect to the Docker daemon", // what was seen
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
	t.Logf("redis-server runs from: binary %q, image %q", b.binary, b.image)
}
