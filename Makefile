# toolcanon — common tasks. `make test` is what CI runs.
GO        ?= go
# Fuzzing is bounded by executions, not seconds: a time bound can end a
# run mid-input on a loaded machine and report a spurious failure.
FUZZTIME  ?= 40000x
# The benchmark smoke: passes timed for a fixed time (the same for every
# implementation, so the run's length does not depend on the slowest), five
# interleaved repetitions whose best is compared, one contention round.
SMOKE_FLAGS   ?= -d 250ms -reps 5 -rounds 1 -c 1,64
SMOKE_TIMEOUT ?= 60
# The report's comparison and benchmark sizes (bench/cmd/report -h).
REPORT_FLAGS  ?= -compare "-d 1s -reps 5 -rounds 3" -benchtime 1s

# The modules of this repository, as go.work lists them (adding a module is
# its line in go.work), and the package patterns that cover them all.
MODULES := $(shell $(GO) work edit -json | sed -n 's/^[[:space:]]*"DiskPath": "\(.*\)",*$$/\1/p')
PKGS    := $(addsuffix /...,$(MODULES))

.PHONY: all demo setup deps generate check-generated tidy check-tidy lint test test-mcp-ts conformance test-short fuzz bench bench-compare bench-projection bench-memstore bench-memory bench-stall bench-latency bench-smoke bench-report eval-patterns eval-redaction

all: lint test

## demo: a scripted agent run through the boundary on the embedded in-memory store (no setup).
demo:
	$(GO) run ./cmd/toolcanon demo

## ui-demo: a private redis-server on UI_DEMO_REDIS, the demo run against it three times and the UI's
## seeded run (a call stuck past its lease, hostile text), then `toolcanon ui` on loopback with actions
## on, printing its URL; Ctrl-C stops the UI and the server.
UI_DEMO_REDIS  ?= 127.0.0.1:7479
UI_DEMO_LISTEN ?= 127.0.0.1:7474
.PHONY: ui-demo ui-screenshots
ui-demo:
	@dir=$$(mktemp -d); trap 'kill $$(cat $$dir/pid 2>/dev/null) 2>/dev/null; rm -rf $$dir' EXIT INT TERM; \
		$(GO) build -o $$dir/toolcanon ./cmd/toolcanon && (cd ui && $(GO) build -o $$dir/seed ./internal/seed/cmd/seed) || exit 1; \
		redis-server --bind 127.0.0.1 --port $(lastword $(subst :, ,$(UI_DEMO_REDIS))) --save '' --appendonly no --dir $$dir \
			--daemonize yes --pidfile $$dir/pid >/dev/null || exit 1; \
		for i in 1 2 3; do $$dir/toolcanon demo --redis $(UI_DEMO_REDIS) >/dev/null 2>&1 && break; sleep 0.3; done; \
		for i in 2 3; do $$dir/toolcanon demo --redis $(UI_DEMO_REDIS) >/dev/null || exit 1; done; \
		$$dir/seed --redis $(UI_DEMO_REDIS) || exit 1; \
		$$dir/toolcanon ui --redis $(UI_DEMO_REDIS) --listen $(UI_DEMO_LISTEN) --allow-actions

## ui-screenshots: redraw the README's screenshots of the UI (docs/ui/) in headless chromium.
ui-screenshots:
	TOOLCANON_UI_SCREENSHOTS=$(CURDIR)/docs/ui $(GO) test -count=1 -run '^TestBrowserScreens$$' ./ui/

## setup: install what the tests need beyond Go and make, from Debian with apt-get as root where missing (the
## list is .ci/deps: redis-server, gcc, make, git, nodejs, npm, chromium, postgresql), and fetch every module's
## dependencies.
setup:
	@./.ci/deps install
	@set -e; for m in $(MODULES); do echo "go mod download ($$m)"; (cd $$m && $(GO) mod download); done

## generate: regenerate the Go wrappers of the Lua scripts and the table of slot tags.
generate:
	$(GO) generate $(PKGS)

## check-generated: fail when the committed generated code is stale.
check-generated: generate
	@git diff --exit-code -- '*scripts_gen.go' canonical/slottags_gen.go lua/format.lib || { echo "generated code is stale: run 'make generate' and commit"; exit 1; }

## tidy: go mod tidy in every module (a new dependency: import it, then make tidy). go mod tidy
## reads no go.work, so .ci/tidy runs it on a copy of each go.mod that replaces this repository's modules
## with their directories, and writes back the copy without the replace directives.
tidy:
	./.ci/tidy

## check-tidy: fail when a module's go.mod or go.sum is not tidy (changes nothing).
check-tidy:
	@./.ci/tidy -diff

## lint: formatting of every Go file and vet in every module.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@set -e; for m in $(MODULES); do echo "go vet ./... ($$m)"; (cd $$m && $(GO) vet ./...); done

## test: what the tests need (.ci/deps: installed with apt-get as root, else it stops at once naming the one command
## that installs it), lint, short fuzz runs, then every test of every module under the race detector against real Redis
## (a redis-server and a 3-master cluster that the tests start), then the store, durability, audit
## and cluster suites (VALKEY_PKGS) again on Valkey 8, which the harness builds once from
## third_party/valkey into the user's cache directory; ends with a count line over both.
## Without a redis-server every test runs on Valkey in the first pass, and the second is not needed.
VALKEY_PKGS ?= ./internal/redistest/ ./canonical/redisstore/ ./test/ ./audit/
test: deps lint
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME)
	@echo "go test -race -count=1 -timeout=30m $(PKGS)"
	@log=$$(mktemp); vlog=$$(mktemp); $(GO) test -race -count=1 -timeout=30m -v $(PKGS) >$$log 2>&1; rc=$$?; \
		grep -hE '^redistest: ' $$log | sort -u; \
		if [ $$rc -ne 0 ]; then grep -vE '^\s*(=== (RUN|PAUSE|CONT)|--- PASS)' $$log; else grep -E '^(ok|FAIL|\?) ' $$log; fi; \
		if grep -q '^redistest: no redis-server on PATH' $$log; then :; else \
			echo "TOOLCANON_SERVER=valkey go test -race -count=1 -timeout=30m $(VALKEY_PKGS)"; \
			TOOLCANON_SERVER=valkey $(GO) test -race -count=1 -timeout=30m -v $(VALKEY_PKGS) >$$vlog 2>&1; vrc=$$?; \
			grep -hE '^redistest: ' $$vlog | sort -u; \
			if [ $$vrc -ne 0 ]; then grep -vE '^\s*(=== (RUN|PAUSE|CONT)|--- PASS)' $$vlog; rc=$$vrc; \
			else grep -E '^(ok|FAIL|\?) ' $$vlog | sed 's/$$/ (valkey)/'; fi; \
		fi; \
		echo "tests: $$(cat $$log $$vlog | grep -cE '^\s*--- PASS') passed, $$(cat $$log $$vlog | grep -cE '^\s*--- FAIL') failed, $$(cat $$log $$vlog | grep -cE '^\s*--- SKIP') skipped"; \
		rm -f $$log $$vlog; exit $$rc
	@$(MAKE) --no-print-directory test-mcp-ts

## test-mcp-ts: the gateway driven by the official MCP TypeScript SDK in front of server-everything
## (test/mcp-ts, pinned by its package-lock.json, installed with npm ci), on a redis-server it starts.
## Needs node and npm (.ci/deps installs them as root, else names the command that does).
MCP_TS_DIR ?= test/mcp-ts
test-mcp-ts:
	@./.ci/deps ensure nodejs npm redis-server
	@echo "node $$(node --version), npm $$(npm --version): npm ci && node --test in $(MCP_TS_DIR)"
	@mkdir -p bin && $(GO) build -o bin/toolcanon ./cmd/toolcanon
	@cd $(MCP_TS_DIR) && npm ci --no-audit --no-fund --loglevel=error && \
		TOOLCANON_BIN=$(CURDIR)/bin/toolcanon node --test --test-concurrency=1 --test-reporter=spec *.test.mjs

## deps: stop at once, naming the one command to run, when something the tests need is missing (as root with
## apt-get: install it instead).
deps:
	@./.ci/deps ensure

## conformance: the server scenarios of @modelcontextprotocol/conformance 0.1.16 through the gateway, stateless and
## with --sessions, in front of the suite's reference server (test/mcp-ts/conformance; Node 22 from the npm package
## "node"); prints each scenario with the reason of each failed check, and fails when the outcomes leave baseline.yml.
## Needs npm; not part of make test (about 30 s to install, 15 s to run).
conformance:
	@mkdir -p bin && $(GO) build -o bin/toolcanon ./cmd/toolcanon
	@cd test/mcp-ts/conformance && npm ci --no-audit --no-fund --loglevel=error && \
		TOOLCANON_BIN=$(CURDIR)/bin/toolcanon node_modules/.bin/node run.mjs

## test-short: the tests of every module without the race detector or fuzzing.
test-short:
	$(GO) test -count=1 $(PKGS)

## fuzz: run every fuzz target of every module for FUZZTIME each (an execution count, or a duration like 30s). A target that
## fails prints the inputs it wrote and, for the targets that record them (TOOLCANON_FUZZ_CRASH_DIR), its processes' crash output.
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
		dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
		for t in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //' | sort -u); do \
			echo "fuzz $$pkg $$t ($(FUZZTIME))"; \
			crash=$$(mktemp -d); \
			TOOLCANON_FUZZ_CRASH_DIR=$$crash $(GO) test -run='^$$' -fuzz="^$$t\$$" -fuzztime=$(FUZZTIME) $$pkg >/tmp/toolcanon-fuzz.log 2>&1 || { \
				cat /tmp/toolcanon-fuzz.log; \
				for f in $$(git -C $$dir ls-files --others --exclude-standard testdata/fuzz 2>/dev/null); do \
					echo "--- $$f (first 4 KiB):"; head -c 4096 $$dir/$$f; echo; \
				done; \
				for f in $$crash/*; do if [ -s $$f ]; then echo "--- a fuzz process's crash output (first 8 KiB):"; head -c 8192 $$f; fi; done; \
				rm -rf $$crash; exit 1; }; \
			rm -rf $$crash; \
		done; \
	done

## bench: every benchmark of every module, with allocations.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem $(PKGS)

## bench-compare: our store against the seed's design, WATCH/MULTI and go-redis+Lua, side by side on one server, with the
## floor (plain HSETs of the same bytes) and a PostgreSQL idempotency table it starts; prints redisstore ÷ floor and ÷ postgres.
bench-compare:
	$(GO) run ./bench/cmd/compare

## bench-latency: what the gateway adds to one tool call, per mode (stdio, stateless HTTP, --sessions) and store
## (memory, Redis), against the upstream called directly over the same transport: medians of 600 calls each, in
## rotating order, three runs; reports each median, the added µs and the ratio (gateway/latency_bench_test.go).
bench-latency:
	cd gateway && $(GO) test -count=3 -run='^$$' -bench='^BenchmarkCallLatency$$' -benchtime=600x .

## bench-memstore: memstore's Begin latency with 500k live records (p50, p99.9, max), then lifecycles/s
## at GOMAXPROCS 1 and 2 in MEMSTORE_ROUNDS interleaved rounds, and the ratio of their medians (runs are
## independent: on 2 otherwise idle cores it approaches 2x), with lifecycles per CPU-second of the
## process, which stay level when the store adds no contention.
MEMSTORE_ROUNDS ?= 3
bench-memstore:
	@out=$$($(GO) test -count=1 -run='^$$' -bench='^BenchmarkBeginLive$$' -benchtime=20000x -v ./canonical/memstore/) || { echo "$$out"; exit 1; }; \
		echo "$$out" | grep -vE '^(=== RUN|goos|goarch|pkg|cpu|PASS)'
	@out=$$(for i in $$(seq $(MEMSTORE_ROUNDS)); do \
			$(GO) test -count=1 -run='^$$' -bench='^BenchmarkScaling$$' -cpu=1,2 -v ./canonical/memstore/ || exit 1; \
		done) || { echo "$$out"; exit 1; }; \
		echo "$$out" | grep -E '^Benchmark.*lifecycles/s'; \
		echo "$$out" | awk ' \
			function median(v, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t } \
				return n % 2 ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2 } \
			/lifecycles per CPU-second/ { for (i = 1; i < NF; i++) if ($$(i+1) == "lifecycles") last = $$i } \
			/^BenchmarkScaling/ { for (i = 2; i < NF; i++) if ($$(i+1) == "lifecycles/s") { \
				if ($$1 ~ /-2$$/) { two[++n2] = $$i; ctwo[n2] = last } else { one[++n1] = $$i; cone[n1] = last } } } \
			END { if (n1 == 0 || n2 == 0) { print "memstore scaling: no ratio"; exit 1 } \
				m1 = median(one, n1); m2 = median(two, n2); \
				printf "memstore scaling: median lifecycles/s %.0f at GOMAXPROCS 1, %.0f at 2: GOMAXPROCS 2 / 1 = %.2fx\n", m1, m2, m2 / m1; \
				printf "memstore scaling: median lifecycles per CPU-second %.0f at GOMAXPROCS 1, %.0f at 2\n", median(cone, n1), median(ctwo, n2) }'

## bench-smoke: a short comparison (SMOKE_FLAGS), bounded at SMOKE_TIMEOUT seconds once built; prints the tables, the ratios and
## fails when a correctness column of toolcanon's stores is not zero or redisstore is slower than go-redis running the same scripts at 64 callers.
bench-smoke:
	@mkdir -p bin && $(GO) build -o bin/compare ./bench/cmd/compare
	timeout -k 10 $(SMOKE_TIMEOUT) ./bin/compare $(SMOKE_FLAGS) -check

## bench-report: write bench/REPORT.md and its SVG charts (bench/report/): the machine, the versions, the comparison,
## projection MB/s by input size, memstore latency and scaling, redisstore memory per record (REPORT_FLAGS for sizes).
bench-report:
	$(GO) run ./bench/cmd/report $(REPORT_FLAGS)

## bench-memory: Redis memory per READY record (used_memory delta over 10,000 records on a fresh
## redis-server) at 1 KiB, 8 KiB and 64 KiB of payload: B/record, payload-B/record, overhead-B/record.
bench-memory:
	$(GO) test -run='^$$' -bench='^BenchmarkRecordMemory$$' -benchtime=1x ./canonical/redisstore/

## bench-stall: how long one completion of a large record blocks a fresh redis-server (SLOWLOG, commandstats,
## LATENCY, a concurrent PING, Lua memory) at the default MaxRecordBytes, 8 MiB and the ceiling.
bench-stall:
	$(GO) run ./bench/cmd/stall

## bench-projection: the query-log and RAG projectors against their encoding/json baselines (same output bytes) at
## 1 KiB, 64 KiB, 1 MiB and 8 MiB, then the speed-up of each size. The benchmark runs BENCHCOUNT times in a row,
## each run measuring both sides of a size one after the other, and the fastest measurement of each counts, so
## that a shared machine's other load counts less.
BENCHTIME  ?= 1s
BENCHCOUNT ?= 5
bench-projection:
	@dir=$$(mktemp -d); $(GO) test -c -o $$dir/projectors.test ./projectors/ || { rm -rf $$dir; exit 1; }; \
		for i in $$(seq $(BENCHCOUNT)); do \
			(cd projectors && $$dir/projectors.test -test.run='^$$' -test.bench='^BenchmarkProjectionSizes$$' \
				-test.benchmem -test.benchtime=$(BENCHTIME)) >>$$dir/log 2>&1 || { cat $$dir/log; rm -rf $$dir; exit 1; }; \
		done; \
		grep -E '^Benchmark' $$dir/log; awk -f projectors/cmd/benchratio.awk $$dir/log; rm -rf $$dir

## eval-patterns: pattern-mining grouping accuracy on the Loghub 2k samples, read from the directory in
## LOGHUB_DIR (research licence: never copied into the repository). Exits 2, saying where to get them, without it.
eval-patterns:
	@mkdir -p bin && $(GO) build -o bin/evalpatterns ./projectors/cmd/evalpatterns
	@./bin/evalpatterns

## eval-redaction: every evaluation set under projectors/redact/testdata (a directory of planted.txt,
## ordinary.txt and verbatim.txt; blind/ is measured apart and never tuned on): per set, the planted values that
## leak through the redactor and through the query-log projector, the ordinary lines changed and those whose
## words are not mostly intact, the verbatim lines changed, and the time; then the same with gitleaks' default
## rules as an extra detector (the module projectors/redact/gitleakseval), and the query-log projection speed at
## 1 MiB without and with them. Fails when a training set leaks, or a tuned set keeps the words of under 99% of
## its ordinary lines or changes a verbatim line. REDACTION_SETS=dev2,heldout (set names, "first" for the root's
## own) reads and prints only those sets.
EVALBENCH ?= 5x
eval-redaction:
	@out=$$($(GO) test -count=1 -v -run '^TestRedactionCorpus' ./projectors/redact/ ./projectors/querylog/ 2>&1); rc=$$?; \
		echo "$$out" | grep -E 'redaction corpus:|^(ok|FAIL)|^--- FAIL|[0-9]+ planted values leak|lose their words|verbatim lines changed' | sed 's/^ *[a-z_]*_test.go:[0-9]*: //'; \
		gl=$$(cd projectors/redact/gitleakseval && $(GO) test -count=1 -v -run '^TestRedactionCorpusWithGitleaks$$' \
			-bench '^BenchmarkQueryLogProjection$$' -benchtime=$(EVALBENCH) . 2>&1); rc2=$$?; \
		echo "$$gl" | grep -E 'redaction corpus:|gitleaks v8|^Benchmark|^(ok|FAIL)|^--- FAIL' | sed 's/^ *[a-z_]*_test.go:[0-9]*: //'; \
		echo "$$gl" | awk '/^BenchmarkQueryLogProjection\/redactor\/1MiB/ {a=$$3} /^BenchmarkQueryLogProjection\/redactor\+gitleaks\/1MiB/ {b=$$3} \
			END {if (a && b) printf "query-log projection at 1 MiB: with gitleaks rules %.2fx the time without\n", b/a}'; \
		[ $$rc -eq 0 ] && [ $$rc2 -eq 0 ]
