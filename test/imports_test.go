package test

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/toolcanon/toolcanon"

// storeReach lists what only a store may reach: Redis clients, the store
// implementations, the scripts, and the harnesses that start servers.
var storeReach = []string{
	"github.com/redis/",               // rueidis, go-redis
	"github.com/go-redis/",            // go-redis before v9
	"github.com/gomodule/redigo",      // redigo
	"github.com/mediocregopher/radix", // radix
	"github.com/testcontainers/",      // servers in containers
	module + "/canonical/redisstore",  // the Redis store
	module + "/canonical/memstore",    // the in-memory store
	module + "/canonical/storetest",   // the stores' conformance suite
	module + "/internal/redistest",    // test servers
	module + "/lua",                   // the store's scripts
	module + "/internal/scripts_gen",  // their generator
	module + "/bench",                 // baselines that write records their own way
	module + "/cmd/",                  // commands wire stores in
	module + "/projectors/cmd/",       // so do the projectors' commands
}

// deps returns, for each package the patterns name, every package it
// imports, directly or not (test files excluded), by import path.
func deps(t *testing.T, patterns ...string) map[string][]string {
	t.Helper()
	args := append([]string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			m[f[0]] = f[1:]
		}
	}
	return m
}

// reaches returns the imports of each package that only a store may reach.
func reaches(graph map[string][]string) map[string][]string {
	bad := map[string][]string{}
	for pkg, ds := range graph {
		for _, d := range ds {
			for _, p := range storeReach {
				if d == strings.TrimSuffix(p, "/") || strings.HasPrefix(d, p) {
					bad[pkg] = append(bad[pkg], d)
					break
				}
			}
		}
	}
	return bad
}

// Redis stays inside the store: the boundary, progress and the projectors
// know records only through canonical.Store and canonical.Projector, and no
// Redis client or store implementation is in their import graph, directly or
// through anything they import. So an adapter built on them cannot write a
// parallel store.
func TestAdaptersReachNoRedisClientOrStore(t *testing.T) {
	graph := deps(t, "./boundary/...", "./progress/...", "./projectors/...")
	for _, want := range []string{"/boundary", "/progress", "/projectors", "/projectors/rag", "/projectors/querylog", "/projectors/redact", "/projectors/drain"} {
		if _, ok := graph[module+want]; !ok {
			t.Fatalf("%s is not among the packages checked: %v", module+want, slices.Sorted(maps.Keys(graph)))
		}
	}
	// Their commands (projectors/cmd/...) are programs, not adapters.
	for pkg := range graph {
		if strings.HasPrefix(pkg, module+"/projectors/cmd/") {
			delete(graph, pkg)
		}
	}
	for pkg, ds := range reaches(graph) {
		t.Errorf("%s reaches %v: only a store may", pkg, ds)
	}
	// The check can fail: the Redis store and the commands do reach them.
	control := reaches(deps(t, "./canonical/redisstore", "./cmd/toolcanon"))
	if len(control[module+"/canonical/redisstore"]) == 0 || len(control[module+"/cmd/toolcanon"]) == 0 {
		t.Fatalf("the check sees nothing where it must: %v", control)
	}
	t.Logf("%d packages checked; the control found %v", len(graph), control[module+"/canonical/redisstore"])
}
