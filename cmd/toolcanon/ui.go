package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/toolcanon/toolcanon/gateway"
	"github.com/toolcanon/toolcanon/ui"
)

const uiUsage = `toolcanon ui --redis ADDR[,ADDR...] [--cluster] [--listen 127.0.0.1:7474] [--show-raw] [--allow-actions]
             [--token-file FILE] [--session-ttl 8h] [--trusted-proxy CIDR[,CIDR...]] [--insecure-no-auth]
             [--live-interval 5s] [--page-size 50]
  Serve the operator UI of a Redis store: runs, a run's calls, a call.
  Read-only unless --allow-actions (abandon a passed lease, reap a run, close
  a run: each confirmed, CSRF-checked and logged). Raw responses and requests
  only with --show-raw, redacted and capped. --listen beyond loopback needs
  --token-file (bearer tokens, one per line), or --insecure-no-auth; a
  browser signs in once for --session-ttl. Behind a reverse proxy that
  terminates TLS, --trusted-proxy names it: its X-Forwarded-For and
  X-Forwarded-Proto are believed (the session cookie is then Secure).
`

// maxTokenFile bounds --token-file.
const maxTokenFile = 64 << 10

// uiCmd serves the operator UI until SIGINT or SIGTERM.
func uiCmd(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return uiServe(ctx, args, stdout, stderr)
}

// uiServe serves the operator UI until ctx ends.
func uiServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ui", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var rf redisFlags
	rf.register(fs)
	listen := fs.String("listen", "127.0.0.1:7474", "serve HTTP on ADDR (host:port)")
	showRaw := fs.Bool("show-raw", false, "show raw responses and requests, redacted and capped")
	rawCap := fs.Int("raw-cap", ui.DefaultRawCap, "with --show-raw: the most bytes of a raw response or request shown")
	actions := fs.Bool("allow-actions", false, "offer abandon, reap and close, each confirmed and logged")
	tokenFile := fs.String("token-file", "", "file of bearer tokens, one per line, required of every request")
	insecure := fs.Bool("insecure-no-auth", false, "serve a non-loopback address without bearer tokens, to anyone who reaches it")
	live := fs.Duration("live-interval", ui.DefaultLiveInterval, "how often a page refreshes itself")
	sessionTTL := fs.Duration("session-ttl", ui.DefaultSessionTTL, "with --token-file: how long a browser's sign-in lasts")
	proxies := fs.String("trusted-proxy", "", "addresses or CIDR prefixes of reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed")
	pageSize := fs.Int("page-size", ui.DefaultPageSize, "runs or calls per page")
	fs.Usage = func() { fmt.Fprint(stderr, uiUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	switch err := rf.check(); {
	case err != nil:
		fmt.Fprintf(stderr, "toolcanon ui: %v\n\n"+uiUsage, err)
		return exitUsage
	case !rf.given() || fs.NArg() > 0:
		fmt.Fprint(stderr, "toolcanon ui: --redis is required\n\n"+uiUsage)
		return exitUsage
	case *live < ui.MinLiveInterval || *pageSize < 1 || *pageSize > ui.MaxPageSize || *rawCap < 1 || *rawCap > ui.MaxRawCap ||
		*sessionTTL < time.Minute || *sessionTTL > 30*24*time.Hour:
		fmt.Fprintf(stderr, "toolcanon ui: --live-interval must be at least %v, --page-size in 1..%d, --raw-cap in 1..%d, --session-ttl in 1m..720h\n",
			ui.MinLiveInterval, ui.MaxPageSize, ui.MaxRawCap)
		return exitUsage
	}
	trusted, err := parsePrefixes(*proxies)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon ui: --trusted-proxy: %v\n", err)
		return exitUsage
	}
	var tokens []string
	if *tokenFile != "" {
		var err error
		if tokens, err = readTokens(*tokenFile); err != nil {
			fmt.Fprintf(stderr, "toolcanon ui: %v\n", err)
			return exitUsage
		}
	}
	loopback := gateway.LoopbackOnly(ctx, *listen)
	if !loopback && len(tokens) == 0 && !*insecure {
		fmt.Fprintf(stderr, uiOpenRefused, *listen)
		return exitUsage
	}
	store, err := rf.open()
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon ui: %v\n", err)
		return codeExit(err)
	}
	defer store.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "toolcanon ui: cannot listen on %s: %v\n", *listen, err)
		return exitFailure
	}
	tcp, _ := ln.Addr().(*net.TCPAddr)
	if tcp != nil && !tcp.IP.IsLoopback() && len(tokens) == 0 && !*insecure {
		ln.Close()
		fmt.Fprintf(stderr, uiOpenRefused, ln.Addr())
		return exitUsage
	}
	opts := ui.Options{ShowRaw: *showRaw, RawCap: *rawCap, AllowActions: *actions, BearerTokens: tokens,
		LiveInterval: *live, PageSize: *pageSize, Log: slog.New(slog.NewTextHandler(stderr, nil)),
		SessionTTL: *sessionTTL, TrustedProxies: trusted}
	if tcp != nil && tcp.IP.IsLoopback() && len(tokens) == 0 {
		// Without tokens only the loopback names are served: a page of
		// another site whose name resolves here (DNS rebinding) is refused.
		opts.Hosts = []string{"127.0.0.1", "::1", "localhost"}
	}
	srv := &http.Server{Handler: ui.Handler(store, opts), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "toolcanon ui: http://%s/ (%s%s)\n", ln.Addr(), map[bool]string{true: "actions on", false: "read-only"}[*actions],
		map[bool]string{true: ", raw shown redacted", false: ""}[*showRaw])
	code := exitOK
	select {
	case <-ctx.Done():
	case err := <-done:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "toolcanon ui: %v\n", err)
			code = exitFailure
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return code
}

// uiOpenRefused is the refusal of an unauthenticated listener beyond
// loopback.
const uiOpenRefused = `toolcanon ui: refusing to serve %s without authentication: it is not only a loopback address.
  Give bearer tokens with --token-file FILE; or listen on loopback (--listen 127.0.0.1:7474);
  or pass --insecure-no-auth to show the store to anyone who can reach the address.
`

// parsePrefixes reads a comma-separated list of addresses and CIDR
// prefixes; an address is a prefix of its whole length.
func parsePrefixes(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR prefix", f)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// readTokens reads bearer tokens, one per line; blank lines are skipped.
func readTokens(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read --token-file: %v", err)
	}
	defer f.Close()
	var toks []string
	sc := bufio.NewScanner(io.LimitReader(f, maxTokenFile))
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			if len(t) < 16 {
				return nil, errors.New("--token-file: every token must be at least 16 characters")
			}
			toks = append(toks, t)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read --token-file: %v", err)
	}
	if len(toks) == 0 {
		return nil, errors.New("--token-file holds no token")
	}
	return toks, nil
}
