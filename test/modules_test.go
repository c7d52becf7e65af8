package test

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// coreRequires is everything the root module may require directly: the
// Redis client, the JSON readers and, for tests, testify. The gateway, the
// OpenTelemetry adapter, the benchmarks (go-redis), the container fallback of
// the test harness and the CLI are modules of their own (go.work lists them),
// so that a module that embeds the core pulls none of their dependencies.
var coreRequires = []string{
	"github.com/buger/jsonparser",
	"github.com/redis/rueidis",
	"github.com/stretchr/testify",
	"github.com/tidwall/gjson",
}

// goModRequires returns the direct and the indirect requirements of the
// go.mod file in dir, read with `go mod edit -json`.
func goModRequires(t *testing.T, dir string) (direct, indirect []string) {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json in %s: %v", dir, err)
	}
	var mod struct {
		Module  struct{ Path string }
		Require []struct {
			Path     string
			Indirect bool
		}
		Replace []struct{ Old struct{ Path string } }
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatalf("go mod edit -json: %v\n%s", err, out)
	}
	if mod.Module.Path != module {
		t.Fatalf("%s/go.mod is module %q, want %q", dir, mod.Module.Path, module)
	}
	if len(mod.Replace) > 0 {
		t.Errorf("the root go.mod has replace directives %v: a tagged version would not resolve them (go.work is for development)", mod.Replace)
	}
	for _, r := range mod.Require {
		if r.Indirect {
			indirect = append(indirect, r.Path)
		} else {
			direct = append(direct, r.Path)
		}
	}
	return direct, indirect
}

func TestRootModuleRequiresOnlyTheCore(t *testing.T) {
	direct, indirect := goModRequires(t, moduleRoot(t))
	if !slices.Contains(direct, "github.com/redis/rueidis") {
		t.Fatalf("direct requirements %v lack rueidis: the check reads the wrong file", direct)
	}
	for _, p := range direct {
		if !slices.Contains(coreRequires, p) {
			t.Errorf("the root module requires %s: only %v may be (move what needs it to a module of its own)", p, coreRequires)
		}
	}
	// What the core's requirements need is indirect; none of it is what the
	// split modules hold.
	for _, p := range indirect {
		for _, bad := range []string{"github.com/modelcontextprotocol/", "go.opentelemetry.io/", "github.com/testcontainers/",
			"github.com/moby/", "github.com/docker/", "github.com/redis/go-redis/", "github.com/gowebpki/"} {
			if strings.HasPrefix(p, bad) {
				t.Errorf("the root module requires %s (indirect): it belongs to a module of its own", p)
			}
		}
	}
	t.Logf("root requires %v directly and %d modules indirectly", direct, len(indirect))
}
