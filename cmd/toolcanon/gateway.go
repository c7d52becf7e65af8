package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/observe"
	"github.com/toolcanon/toolcanon/reaper"
)

const gatewayUsage = `Usage:
  toolcanon gateway --config FILE [--stdio] [--listen ADDR] [--sessions] [--redis ADDR[,ADDR...]]
                    [--trace-file FILE | --trace-stdout] [--insecure-no-auth] [--reap-interval 30s]
                    [--audit-key-file FILE --audit-key-id ID [(--audit-jsonl DIR | --audit-postgres DSN)
                     --audit-signing-key-file FILE [--audit-interval 10s] [--audit-origin NAME]]]
      Serve the configured upstream tools to agents over stdio and/or
      streamable HTTP (at http://ADDR/mcp, stateless unless --sessions).
      Store: in memory, or Redis (several gateways may share one).
      --listen beyond loopback needs http.bearer_tokens or http.oauth in
      the configuration, or --insecure-no-auth to serve without them.
      An HTTP answer to a request that did not authenticate closes its
      connection; a connection has --auth-timeout (5s) to authenticate;
      past --max-connections (4096) or --max-connections-per-source (256)
      a new connection is answered 503 and closed.
      A reaper abandons the calls of any run whose lease passed (a gateway
      died mid-call), a pass every --reap-interval, logged; 0 switches it off.
      --audit-key-file turns the store's audit stream on (an event per
      transition, digests under that HMAC key); --audit-jsonl or
      --audit-postgres also runs its exporter (one pass per store and
      interval, however many gateways share the store).
      --trace-file FILE (or --trace-stdout, not with --stdio) exports the
      OpenTelemetry spans of every call as JSON lines; each call's span is
      the child of the traceparent in the request's _meta, and the call
      passes its own to the upstream in the same way.
  toolcanon gateway pin --config FILE
      Connect to the upstreams and print the configuration with a draft
      entry for each tool (its pin, and its input schema brought into the
      bounded subset), to review; on stderr each tool's state and every
      change made to its schema, with its JSON pointer. Entries already
      pinned and matching are kept as written. Nothing is pinned
      automatically.
  toolcanon gateway check --config FILE
      Check the configuration and exit.
`

// gatewayGCPercent is the garbage collector's target of a gateway process
// unless GOGC says otherwise: the MCP SDK allocates a large buffer for every
// message it decodes, and a gateway's live heap is small, so collecting at
// 4x the live heap instead of 2x saves a collection every few calls for a
// few megabytes.
const gatewayGCPercent = 400

func gatewayCmd(args []string, stdout, stderr io.Writer) int {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gatewayGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return gatewayServe(ctx, args, stdout, stderr)
}

// gatewayServe runs the gateway command until ctx ends.
func gatewayServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "pin":
			return gatewayPinCmd(args[1:], stdout, stderr)
		case "check":
			return gatewayCheckCmd(args[1:], stdout, stderr)
		case "help", "-h", "--help":
			fmt.Fprint(stdout, gatewayUsage)
			return exitOK
		}
	}
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var rf redisFlags
	rf.register(fs)
	config := fs.String("config", "", "configuration file (required)")
	stdio := fs.Bool("stdio", false, "serve one agent over stdin/stdout")
	listen := fs.String("listen", "", "serve streamable HTTP on ADDR (host:port), at /mcp")
	sessions := fs.Bool("sessions", false, "with --listen: keep MCP sessions instead of serving statelessly")
	traceFile := fs.String("trace-file", "", "append the OpenTelemetry spans of every call to FILE, as JSON lines")
	traceStdout := fs.Bool("trace-stdout", false, "write the OpenTelemetry spans of every call to stdout, as JSON lines (not with --stdio)")
	reapEvery := fs.Duration("reap-interval", reaper.DefaultInterval, "time between passes of the reaper over the store's runs (0: no reaper)")
	insecure := fs.Bool("insecure-no-auth", false, "with --listen: serve a non-loopback address without bearer tokens, to anyone who reaches it")
	maxSessions := fs.Int("max-sessions", gateway.DefaultMaxSessions, "with --sessions: the most sessions open at once")
	maxConns := fs.Int("max-connections", defaultMaxConnections, "with --listen: the most HTTP connections open at once; past it a new one is answered 503 and closed (0: no cap)")
	maxConnsEach := fs.Int("max-connections-per-source", defaultMaxConnectionsPerSource, "with --listen: the most HTTP connections open at once from one address (an IPv6 /64), loopback included; past it a new one is answered 503 and closed (0: no cap)")
	authTimeout := fs.Duration("auth-timeout", defaultAuthTimeout, "with --listen: the time a new HTTP connection has to send a request that passes authentication; then the server's own timeouts apply")
	maxSessionsEach := fs.Int("max-sessions-per-principal", gateway.DefaultMaxSessionsPerPrincipal, "with --sessions: the most sessions one principal has open at once")
	maxSessionsCaller := fs.Int("max-sessions-per-caller", gateway.DefaultMaxSessionsPerCaller, "with --sessions: the most sessions one holder of a run token (its principal and run) has open at once")
	sessionTimeout := fs.Duration("session-timeout", gateway.DefaultSessionTimeout, "with --sessions: close a session idle this long")
	maxInFlight := fs.Int("max-calls-in-flight", gateway.DefaultMaxCallsInFlight, "the most calls one principal has in flight (-1: no cap)")
	maxNewRuns := fs.Int("max-new-runs-per-minute", gateway.DefaultMaxNewRunsPerMinute, "the most new runs one principal starts per minute (-1: no cap)")
	maxRuns := fs.Int("max-memory-runs", defaultMemoryRuns, "without --redis: the most runs the in-memory store holds")
	maxLiveRuns := fs.Int("max-live-runs-per-principal", gateway.DefaultMaxLiveRuns, "the most live runs one principal has (in the in-memory store, and begun through this process) (-1: no cap)")
	var af auditFlags
	af.register(fs)
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *config == "" || (!*stdio && *listen == "") || fs.NArg() > 0 {
		fmt.Fprint(stderr, "toolcanon gateway: --config and at least one of --stdio and --listen are required\n\n"+gatewayUsage)
		return exitUsage
	}
	switch {
	case *traceStdout && *traceFile != "":
		fmt.Fprint(stderr, "toolcanon gateway: --trace-file and --trace-stdout exclude each other\n\n"+gatewayUsage)
		return exitUsage
	case *traceStdout && *stdio:
		fmt.Fprint(stderr, "toolcanon gateway: --trace-stdout cannot share stdout with --stdio; use --trace-file\n\n"+gatewayUsage)
		return exitUsage
	case *reapEvery < 0 || *reapEvery > 0 && *reapEvery < reaper.MinInterval:
		fmt.Fprintf(stderr, "toolcanon gateway: --reap-interval must be 0 (no reaper) or at least %v\n\n"+gatewayUsage, reaper.MinInterval)
		return exitUsage
	case *authTimeout <= 0 || *maxConns < 0 || *maxConnsEach < 0:
		fmt.Fprint(stderr, "toolcanon gateway: --auth-timeout must be positive, --max-connections and --max-connections-per-source at least 0\n\n"+gatewayUsage)
		return exitUsage
	}
	if err := rf.check(); err != nil {
		fmt.Fprintf(stderr, "toolcanon gateway: %v\n", err)
		return exitUsage
	}
	cfg, err := gateway.LoadConfig(*config)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon gateway: %v\n", err)
		return exitUsage
	}
	if cfg.Redis != nil {
		if !rf.spec.IsZero() {
			fmt.Fprintf(stderr, "toolcanon gateway: %s names its Redis (\"redis\"), and so do the flags: give one\n", *config)
			return exitUsage
		}
		rf.spec, rf.config = *cfg.Redis, *config
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	if *listen != "" && !cfg.HTTP.Authenticated() && !*insecure && !gateway.LoopbackOnly(context.Background(), *listen) {
		fmt.Fprintf(stderr, openListenerRefused, *listen, *config)
		return exitUsage
	}
	auditOpts, err := af.options()
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon gateway: %v\n\n"+gatewayUsage, err)
		return exitUsage
	}
	memOpts := []memstore.Option{memstore.WithMaxRuns(*maxRuns), memstore.WithMaxRunsPerPrincipal(*maxLiveRuns)}
	if auditOpts != nil {
		memOpts = append(memOpts, memstore.WithAudit(*auditOpts))
	}
	mem := memstore.New(memOpts...)
	var store canonical.Store = mem
	var source canonical.AuditSource = mem // what the audit exporter drains
	var relay gateway.CancelRelay          // a cancel reaches the replica running the call
	dbSystem := "memory"
	if rf.given() {
		rf.audit = auditOpts
		rs, err := rf.open()
		if err != nil {
			fmt.Fprintf(stderr, "toolcanon gateway: %v\n", err)
			return codeExit(err)
		}
		defer rs.Close()
		store, relay, dbSystem, source = rs, rs, "redis", rs
	}
	gopts := gateway.OpenOptions{Logger: log, UpstreamStderr: stderr,
		Caps:   gateway.Caps{MaxCallsInFlight: *maxInFlight, MaxNewRunsPerMinute: *maxNewRuns, MaxLiveRuns: *maxLiveRuns},
		Reaper: reaper.Options{Interval: *reapEvery}, NoReaper: *reapEvery == 0, CancelRelay: relay}
	if *traceFile != "" || *traceStdout {
		tr, err := newGatewayTracing(*traceFile, stdout, dbSystem)
		if err != nil {
			fmt.Fprintf(stderr, "toolcanon gateway: %v\n", err)
			return exitUsage
		}
		defer func() {
			if err := tr.close(); err != nil {
				fmt.Fprintf(stderr, "toolcanon gateway: exporting spans: %v\n", err)
			}
		}()
		store = observe.Store(store, tr.obs)
		gopts.Observer, gopts.Propagator = tr.obs, tr.prop
	}

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	x, closeSink, err := af.exporter(ctx, source, log)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon gateway: audit export: %v\n", err)
		return exitFailure
	}
	defer closeSink()
	if x != nil {
		gopts.AuditExporter = x
	}
	g, err := gateway.Open(ctx, cfg, store, gopts)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon gateway: %s: %v\n", *config, err)
		return exitUsage
	}
	defer g.Close()

	done := make(chan error, 2)
	stdioDone := make(chan error, 1)
	var srv *http.Server
	if *listen != "" {
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			fmt.Fprintf(stderr, "toolcanon gateway: cannot listen on %s: %v\n", *listen, err)
			return exitFailure
		}
		if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !cfg.HTTP.Authenticated() && !*insecure && !tcp.IP.IsLoopback() {
			ln.Close()
			fmt.Fprintf(stderr, openListenerRefused, ln.Addr(), *config)
			return exitUsage
		}
		gl := newGuardListener(ln, *maxConns, *maxConnsEach, *authTimeout)
		ln = gl
		mux := http.NewServeMux()
		h := g.Handler(gateway.HTTPOptions{Sessions: *sessions, MaxSessions: *maxSessions,
			MaxSessionsPerPrincipal: *maxSessionsEach, MaxSessionsPerCaller: *maxSessionsCaller, SessionTimeout: *sessionTimeout})
		mux.Handle("/mcp", h)
		for _, p := range g.MetadataPaths() { // OAuth: the protected resource metadata
			mux.Handle(p, h)
		}
		// No server-wide ReadTimeout or WriteTimeout: they would cut event
		// streams; the handler sets deadlines per request instead, and the
		// listener holds a connection to --auth-timeout until it has
		// authenticated. The paths beside /mcp (answered 404) have their
		// bodies bounded and their connections closed too.
		srv = &http.Server{Handler: gateway.BoundBodies(gateway.CloseUnauthenticated(mux), gateway.DefaultBodyTimeout, gateway.DefaultMaxBodyBytes),
			ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
			ConnContext: gl.ConnContext}
		mode := "stateless"
		if *sessions {
			mode = "with sessions"
		}
		fmt.Fprintf(stderr, "toolcanon gateway: listening on http://%s/mcp (%s)\n", ln.Addr(), mode)
		go func() { done <- srv.Serve(ln) }()
	}
	if *stdio {
		go func() { stdioDone <- g.Server().Run(ctx, &gateway.StdioTransport{}) }()
	}
	code := exitOK
	select {
	case <-ctx.Done():
	case err := <-done:
		// The listener failed.
		if err != nil && !errors.Is(err, http.ErrServerClosed) && ctx.Err() == nil {
			fmt.Fprintf(stderr, "toolcanon gateway: %v\n", err)
			code = exitFailure
		}
	case err := <-stdioDone:
		// stdin closed (the agent is gone), or reading or writing the
		// streams failed: malformed input is answered, never fatal.
		if err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
			fmt.Fprintf(stderr, "toolcanon gateway: stdio: %v\n", oneLine(err.Error()))
			code = exitFailure
		}
	}
	stop()
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
	}
	return code
}

// defaultMemoryRuns bounds the gateway's in-memory store.
const defaultMemoryRuns = 10000

// openListenerRefused is the refusal of an unauthenticated listener beyond
// loopback, with both ways out.
const openListenerRefused = `toolcanon gateway: refusing to serve %s without authentication: it is not only a loopback address, and the configuration lists no bearer tokens.
  Either list tokens in %s: "http": {"bearer_tokens": [{"sha256": "<hex SHA-256 of the token>", "subject": "alice"}]}
  (printf %%s "$TOKEN" | sha256sum), and clients send "Authorization: Bearer $TOKEN";
  or accept your authorization server's access tokens: "http": {"oauth": {"resource": "https://…/mcp", "issuer": "https://…"}};
  or listen on loopback (--listen 127.0.0.1:8080);
  or pass --insecure-no-auth to serve every tool to anyone who can reach the address.
`

func gatewayPinCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gateway pin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "configuration file (required)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *config == "" || fs.NArg() > 0 {
		fmt.Fprint(stderr, "toolcanon gateway pin: --config is required\n\n"+gatewayUsage)
		return exitUsage
	}
	cfg, err := gateway.LoadPinConfig(*config)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon gateway pin: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	drafts, err := gateway.Drafts(ctx, cfg, gateway.OpenOptions{UpstreamStderr: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon gateway pin: %v\n", err)
		return exitFailure
	}
	for _, d := range drafts {
		line := fmt.Sprintf("%s/%s: %s %s", d.Upstream, d.Tool, d.State, d.Pin)
		if d.Kind != "" {
			line = fmt.Sprintf("%s %s/%s: %s %s", d.Kind, d.Upstream, d.Tool, d.State, d.Pin)
		}
		if d.State == gateway.PinChanged {
			line += " (the configuration pins " + d.Pinned + "; review the change before pinning it)"
		}
		refused := 0
		for _, n := range d.Notes {
			if n.Refused {
				refused++
			}
		}
		switch {
		case refused > 0:
			line += fmt.Sprintf("; the subset cannot express %d features of its input schema (below): the draft is narrowed and marked \"unbounded\" for review", refused)
		case d.Problem != "":
			line += "; cannot be used as drafted: " + d.Problem
		}
		fmt.Fprintln(stderr, line)
		for _, n := range d.Notes {
			fmt.Fprintf(stderr, "  %s\n", n)
		}
	}
	// Read again for the members as written; LoadPinConfig checked the file.
	data, err := os.ReadFile(*config)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon gateway pin: %v\n", err)
		return exitFailure
	}
	out, err := gateway.DraftConfig(data, drafts)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon gateway pin: %v\n", err)
		return exitFailure
	}
	if _, err := stdout.Write(out); err != nil {
		return exitFailure
	}
	return exitOK
}

func gatewayCheckCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gateway check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "configuration file (required)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *config == "" || fs.NArg() > 0 {
		fmt.Fprint(stderr, "toolcanon gateway check: --config is required\n\n"+gatewayUsage)
		return exitUsage
	}
	cfg, err := gateway.LoadConfig(*config)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon gateway check: %v\n", err)
		return exitUsage
	}
	surface := ""
	if n := len(cfg.Prompts); n > 0 {
		surface += fmt.Sprintf(", %d prompts", n)
	}
	if n := len(cfg.Resources); n > 0 {
		surface += fmt.Sprintf(", %d resources", n)
	}
	fmt.Fprintf(stdout, "%s: ok: %d tools%s from %d upstreams", *config, len(cfg.Tools), surface, len(cfg.Upstreams))
	if o := cfg.HTTP.OAuth; o != nil {
		fmt.Fprintf(stdout, "; OAuth resource %s, tokens of %s, metadata at %s", o.Resource, o.Issuer, o.MetadataURL())
	}
	fmt.Fprintln(stdout)
	return exitOK
}
