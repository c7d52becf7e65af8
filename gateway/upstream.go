package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/registry"
)

// Digest returns the pin of an upstream tool: "sha256:" and the hex SHA-256
// of the RFC 8785 form of {"description", "inputSchema", "name"}. Anything
// else the upstream says (title, annotations, output schema) does not
// change what the model is told or what it may send, and is not pinned. A
// schema that is not strict JSON cannot be pinned.
func Digest(t *mcp.Tool) (string, error) {
	if t == nil {
		return "", canonical.Errorf(canonical.CodeInvalidArgument, "gateway: no tool to digest")
	}
	doc, err := json.Marshal(struct {
		Description string `json:"description"`
		InputSchema any    `json:"inputSchema"`
		Name        string `json:"name"`
	}{t.Description, t.InputSchema, t.Name})
	if err != nil {
		return "", canonical.Wrap(canonical.CodeInvalidArgument, err, "gateway: the tool's definition is not JSON")
	}
	c, err := registry.Canonicalize(doc)
	if err != nil {
		return "", canonical.Wrap(canonical.CodeInvalidArgument, err, "gateway: the tool's definition is not strict JSON")
	}
	sum := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// UpstreamOptions configure an Upstream.
type UpstreamOptions struct {
	Name    string   // for logs
	Command []string // stdio: program and arguments
	// Env is the stdio server's environment besides the minimal one: the
	// server sees only the gateway's PATH, HOME, LANG and TMPDIR (those that
	// are set), the variables named in InheritEnv, and Env, which wins. It
	// never inherits the rest of the gateway's environment (Redis passwords,
	// other upstreams' tokens).
	Env        map[string]string
	InheritEnv []string    // stdio: more of the gateway's variables to pass on
	Dir        string      // stdio: the server's working directory; "" is the gateway's
	URL        string      // streamable HTTP endpoint
	Header     http.Header // HTTP: sent with every request (for example Authorization)
	// Pins maps each upstream tool the gateway exposes to its pinned digest.
	// A tool not pinned is never called.
	Pins map[string]string
	// PromptPins and TemplatePins map each upstream prompt (by name) and
	// resource template (by URI template) the gateway exposes to its pin
	// (PromptDigest, TemplateDigest); ResourceURIs lists the resources it
	// exposes, whose listing it keeps.
	PromptPins, TemplatePins map[string]string
	ResourceURIs             []string
	// OnResourceUpdated, when set, is told of each resource the upstream
	// says was updated (notifications/resources/updated).
	OnResourceUpdated func(uri string)
	// ConnectTimeout bounds one connection attempt with its tool listing;
	// default 10s.
	ConnectTimeout time.Duration
	Stderr         io.Writer // stdio: the server's stderr; nil discards it
	Logger         *slog.Logger
	// Propagator, when set, puts the trace context of each call (the span
	// the boundary runs the tool under) in the _meta of its tools/call, and
	// nothing else: the agent's _meta, its identity keys among them, is
	// never forwarded.
	Propagator Propagator
	// MaxAgentConnections bounds the connections of one agent session each
	// (a stdio server's processes, an HTTP server's sessions; see
	// Upstream), besides the shared one; default DefaultMaxAgentConnections.
	// Past it, calls run on the shared one.
	MaxAgentConnections int
}

// logs reports whether the upstream of s sends log messages.
func logs(s *mcp.ClientSession) bool {
	ir := s.InitializeResult()
	return ir != nil && ir.Capabilities != nil && ir.Capabilities.Logging != nil
}

// upstreamProtocol is the MCP version the gateway asks of upstreams but
// for the calls of agents that take multi round-trip results
// (modernProtocol, continue.go).
const upstreamProtocol = "2025-11-25"

// modern reports whether s speaks modernProtocol or later.
func modern(s *mcp.ClientSession) bool {
	ir := s.InitializeResult()
	return ir != nil && ir.ProtocolVersion >= modernProtocol
}

// maxUpstreamTools bounds the tools read from one upstream listing.
const maxUpstreamTools = 1024

// retryPause is the shortest time between two connection attempts, so that
// calls to a dead upstream fail fast instead of piling up.
const retryPause = 200 * time.Millisecond

// Upstream is one MCP server the gateway fronts, reached over stdio (a
// command it starts) or streamable HTTP. It connects on first use, and
// again after its connection is lost; on every connection, and whenever the
// server announces a changed tool list, it compares each pinned tool with
// its pin. A tool that differs, or is gone, is refused with
// TOOL_DEFINITION_CHANGED (Check) until it matches its pin again: the
// operator reviews the change and pins it. It is safe for concurrent use.
//
// The server's log messages, sampling and elicitation requests reach only
// the agent of the call they belong to: over HTTP, the call on whose
// response stream they came; else the agent session whose own connection
// sent them — a stdio server is started once more, and an HTTP server gets
// a session more, for each agent session that set a log level or declared
// sampling or elicitation and outlives its requests (at most
// MaxAgentConnections at once). Any other is dropped, or refused.
type Upstream struct {
	opts   UpstreamOptions
	client *mcp.Client
	log    *slog.Logger

	mu     sync.Mutex
	shared sharedConn // of upstreamProtocol: every call's but those below
	// modern is of modernProtocol, for the calls of agents that take an
	// upstream's requests as multi round-trip results (continue.go); nil
	// and noModern once the upstream answered with an earlier revision,
	// whose calls then run on shared.
	modern   sharedConn
	noModern bool
	closed   bool

	stateMu sync.RWMutex
	state   map[string]toolState // by upstream tool name; absent: not yet checked

	verifyMu sync.Mutex // one verification at a time

	inflight calls      // the calls sent and not yet answered
	barriers barriers   // stdio: each connection's barriers
	agents   agentConns // stdio: the connections of one agent session each

	surf surfaceState // guarded by stateMu
	surfaceSubs

	transportOnce sync.Once
	pool          http.RoundTripper
}

// sharedConn is a connection every call of its revision shares.
type sharedConn struct {
	sess     *mcp.ClientSession
	lastFail time.Time
	lastErr  error
}

// toolState is what the last verification found of one pinned tool.
type toolState struct {
	ok     bool
	seen   string // digest seen ("" when gone or unpinnable)
	reason string
	def    *mcp.Tool // the upstream's definition, when ok
}

// same reports whether two states say the same, whatever definition
// object each carries.
func (s toolState) same(o toolState) bool {
	return s.ok == o.ok && s.seen == o.seen && s.reason == o.reason
}

// NewUpstream checks opts and returns an Upstream; nothing is started
// until Connect or the first call.
func NewUpstream(opts UpstreamOptions) (*Upstream, error) {
	if (len(opts.Command) == 0) == (opts.URL == "") {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: upstream %q needs exactly one of a command and a URL", opts.Name)
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.MaxAgentConnections <= 0 {
		opts.MaxAgentConnections = DefaultMaxAgentConnections
	}
	u := &Upstream{opts: opts, state: map[string]toolState{}, log: opts.Logger}
	u.agents.max = opts.MaxAgentConnections
	if u.log == nil {
		u.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	u.log = u.log.With(slog.String("upstream", opts.Name))
	u.client = mcp.NewClient(&mcp.Implementation{Name: "toolcanon-gateway", Version: "1"}, &mcp.ClientOptions{
		// An upstream's input_required result is the agent's to answer
		// (continue.go), never answered here.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ToolListChangedHandler: func(_ context.Context, req *mcp.ToolListChangedRequest) {
			// The handler runs on the session's reader: verify elsewhere.
			go u.reverify(req.Session)
		},
		PromptListChangedHandler: func(_ context.Context, req *mcp.PromptListChangedRequest) {
			go u.reverify(req.Session)
		},
		ResourceListChangedHandler: func(_ context.Context, req *mcp.ResourceListChangedRequest) {
			go u.reverify(req.Session)
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if f := u.opts.OnResourceUpdated; f != nil && req.Params != nil {
				f(req.Params.URI)
			}
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if u.barrier(req.Session, req.Params.ProgressToken) {
				return
			}
			if r := u.inflight.byToken(req.Params.ProgressToken); r != nil {
				r.sendProgress(req.Params)
			}
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			if r := u.relayFor(req.Session, req.Params.Meta); r != nil {
				r.sendLog(req.Params)
			}
		},
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return forwardSampling(ctx, u.relayFor(req.Session, req.Params.Meta), req.Params)
		},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return forwardElicitation(ctx, u.relayFor(req.Session, req.Params.Meta), req.Params)
		},
	})
	return u, nil
}

// Connect connects now, if not connected, and verifies the pins.
func (u *Upstream) Connect(ctx context.Context) error {
	_, err := u.session(ctx)
	return err
}

// Close ends the connections; a stdio server is stopped.
func (u *Upstream) Close() error {
	u.mu.Lock()
	s, m := u.shared.sess, u.modern.sess
	u.shared.sess, u.modern.sess, u.closed = nil, nil, true
	u.mu.Unlock()
	u.closeAgents()
	if m != nil {
		_ = m.Close()
	}
	if s != nil {
		return s.Close()
	}
	return nil
}

// Check reports whether the pinned tool name may be called: nil when its
// last verification matched its pin (or no connection was made yet: the
// call connects and verifies first), TOOL_DEFINITION_CHANGED otherwise.
func (u *Upstream) Check(name string) error {
	if _, pinned := u.opts.Pins[name]; !pinned {
		return canonical.Errorf(canonical.CodeUnknownTool, "gateway: upstream %q tool %q is not pinned", u.opts.Name, name)
	}
	u.stateMu.RLock()
	st, known := u.state[name]
	u.stateMu.RUnlock()
	if !known || st.ok {
		return nil
	}
	return canonical.Errorf(canonical.CodeToolDefinitionChanged, "gateway: upstream %q tool %q: %s", u.opts.Name, name, st.reason)
}

// Listed returns the upstream's definition of the pinned tool name as the
// last verification found it matching its pin; nil before any, or when it
// did not match. Its title and annotations are not pinned.
func (u *Upstream) Listed(name string) *mcp.Tool {
	u.stateMu.RLock()
	defer u.stateMu.RUnlock()
	return u.state[name].def
}

// Tool returns the boundary.Tool that calls the upstream tool name. Its
// raw response is the whole CallToolResult; an isError result is returned
// with ErrToolError.
func (u *Upstream) Tool(name string) boundary.Tool {
	return boundary.ToolFunc(func(ctx context.Context, input []byte) ([]byte, error) {
		return u.call(ctx, name, input)
	})
}

func (u *Upstream) call(ctx context.Context, name string, input []byte) ([]byte, error) {
	r := relayOf(ctx)
	r.setMask(boundary.MaskerFrom(ctx))
	var s *mcp.ClientSession
	var own *agentConn
	var err error
	if r != nil && r.asked && (u.opts.URL == "" || r.lasting) {
		s, own, err = u.agentSession(ctx, r)
	}
	if s == nil && err == nil {
		if r != nil && r.inputs != nil {
			s, err = u.modernSession(ctx)
		} else {
			s, err = u.session(ctx)
		}
	}
	if err != nil {
		// Nothing was sent: the upstream did not run.
		if ctx.Err() != nil {
			return nil, boundary.NotRun(canonical.CodeCancelled, err)
		}
		return nil, boundary.NotRun(canonical.CodeUpstreamUnavailable, err)
	}
	if err := u.Check(name); err != nil {
		return nil, boundary.NotRun(canonical.CodeOf(err), err)
	}
	params := &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(input)}
	if p := u.opts.Propagator; p != nil {
		// Read from ctx before its values are dropped: the span is one.
		meta := map[string]any{}
		p.Inject(ctx, meta)
		if len(meta) > 0 {
			params.Meta = meta
		}
	}
	if modern(s) {
		if err := continueParams(ctx, r, s, params); err != nil {
			return nil, err
		}
	} else if _, ok := boundary.ContinuationFrom(ctx); ok {
		return nil, boundary.NotRun(canonical.CodeUpstreamUnavailable,
			fmt.Errorf("gateway: upstream %q no longer speaks %s, the revision the call began on", u.opts.Name, modernProtocol))
	}
	// Each call has its own progress token upstream, never the agent's,
	// which another agent's call may share, and a mark its HTTP response
	// stream stamps on the messages that belong to it.
	tok, mark := u.inflight.add(r)
	if r != nil {
		defer r.later(func() { u.inflight.remove(tok, mark) })
		if r.token != nil {
			params.SetProgressToken(tok)
		}
		if own != nil {
			own.enter(r)
			defer r.later(func() { own.leave(r) })
		}
	} else {
		defer u.inflight.remove(tok, mark)
	}
	cctx, cancel := withoutValues(ctx)
	defer cancel()
	cctx = context.WithValue(withCallMark(cctx, mark), routeKey{}, route{methodCallTool, name})
	res, err := s.CallTool(cctx, params)
	if r != nil && (r.token != nil || r.wantsLogs && logs(s)) {
		u.drain(r, s)
	}
	if err != nil {
		if ctx.Err() == nil && transportFailed(err) {
			// The connection failed, not the call: connect again next time.
			if own != nil {
				u.forget(own)
			} else {
				u.drop(s, err)
			}
			if undelivered(err) {
				return nil, boundary.NotRun(canonical.CodeUpstreamUnavailable, err)
			}
		}
		return nil, err
	}
	if res.NeedsInput() {
		return nil, askAgent(r, res)
	}
	return resultRaw(res)
}

// withoutValues returns a context with ctx's deadline and cancellation but
// none of its values. A call arrives with the context of the agent's
// request, whose values the SDK reads as the state of that request (its
// protocol version among them); they must not leak into the gateway's own
// requests to an upstream.
func withoutValues(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(context.Background())
	if dl, ok := ctx.Deadline(); ok {
		var cancelDL context.CancelFunc
		out, cancelDL = context.WithDeadline(out, dl)
		prev := cancel
		cancel = func() { cancelDL(); prev() }
	}
	stop := context.AfterFunc(ctx, cancel)
	return out, func() { stop(); cancel() }
}

// codeRejectedByTransport is the JSON-RPC code the SDK gives a request its
// transport could not deliver (a refused connection, a lost stream).
const codeRejectedByTransport = -32005

// transportFailed reports whether err is the connection's failure rather
// than the upstream's answer: anything but a JSON-RPC error from the peer.
func transportFailed(err error) bool {
	var rpc *jsonrpc.Error
	return !errors.As(err, &rpc) || rpc.Code == codeRejectedByTransport
}

// undelivered reports whether the request cannot have reached the
// upstream: its connection was refused. Any other failure (the SDK's
// "rejected" code included, which it also gives a stream lost mid-call)
// may have come after the upstream started.
func undelivered(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED)
}

// List returns the upstream's tools (at most 1024), connecting if needed.
func (u *Upstream) List(ctx context.Context) ([]*mcp.Tool, error) {
	s, err := u.session(ctx)
	if err != nil {
		return nil, err
	}
	return listTools(ctx, s)
}

func listTools(ctx context.Context, s *mcp.ClientSession) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if len(out) == maxUpstreamTools {
			return nil, fmt.Errorf("gateway: the upstream lists more than %d tools", maxUpstreamTools)
		}
		out = append(out, t)
	}
	return out, nil
}

// session returns the connected session, connecting and verifying first
// when there is none.
func (u *Upstream) session(ctx context.Context) (*mcp.ClientSession, error) {
	return u.sharedSession(ctx, &u.shared, upstreamProtocol)
}

// modernSession returns the session of modernProtocol, connecting first
// when there is none; the shared one when the upstream speaks an earlier
// revision.
func (u *Upstream) modernSession(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	no := u.noModern
	u.mu.Unlock()
	if no {
		return u.session(ctx)
	}
	s, err := u.sharedSession(ctx, &u.modern, modernProtocol)
	if err != nil || s.InitializeResult().ProtocolVersion >= modernProtocol {
		return s, err
	}
	// An earlier revision: one connection of it is enough.
	u.mu.Lock()
	u.noModern = true
	u.mu.Unlock()
	u.drop(s, nil)
	return u.session(ctx)
}

// sharedSession returns c's session, connecting at version and verifying
// first when there is none.
func (u *Upstream) sharedSession(ctx context.Context, c *sharedConn, version string) (*mcp.ClientSession, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.closed:
		return nil, canonical.Errorf(canonical.CodeUpstreamUnavailable, "gateway: upstream %q is closed", u.opts.Name)
	case c.sess != nil:
		return c.sess, nil
	case time.Since(c.lastFail) < retryPause:
		return nil, c.lastErr
	}
	s, err := u.dial(ctx, version)
	if err != nil {
		c.lastFail, c.lastErr = time.Now(), err
		return nil, err
	}
	c.sess = s
	go func() {
		err := s.Wait()
		u.drop(s, err)
	}()
	return s, nil
}

// dial opens a connection of version (a stdio server started, or an HTTP
// session) and verifies the pins on it.
func (u *Upstream) dial(ctx context.Context, version string) (*mcp.ClientSession, error) {
	cctx, cancel := withoutValues(ctx)
	defer cancel()
	cctx, cancelTimeout := context.WithTimeout(cctx, u.opts.ConnectTimeout)
	defer cancelTimeout()
	// 2025-11-25 (upstreamProtocol): what the servers in use speak; an
	// upstream's log level is its session's, and its sampling and
	// elicitation requests reach the gateway as requests (multi round-trip
	// results included, which the upstream's SDK turns into requests for a
	// client of this version). modernProtocol: the level comes with each
	// request, and input is asked for in results.
	t := u.transport()
	s, err := u.client.Connect(cctx, t, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if bt, ok := t.(*barrierTransport); ok && err == nil {
		u.barriers.put(s, bt.st)
	}
	if err == nil && logs(s) && !modern(s) {
		_ = s.SetLoggingLevel(cctx, &mcp.SetLoggingLevelParams{Level: "debug"}) // the agent's session filters
	}
	if err == nil {
		if err = u.verify(cctx, s); err != nil {
			_ = s.Close()
		}
	}
	if err != nil {
		u.log.Warn("cannot connect", slog.Any("cause", err))
		return nil, fmt.Errorf("gateway: upstream %q unreachable: %w", u.opts.Name, err)
	}
	u.log.Info("connected", slog.String("protocol", s.InitializeResult().ProtocolVersion))
	return s, nil
}

// drop forgets s if it is still the session, so that the next call
// connects again; a stdio server is stopped.
func (u *Upstream) drop(s *mcp.ClientSession, cause error) {
	u.mu.Lock()
	mine := false
	for _, c := range []*sharedConn{&u.shared, &u.modern} {
		if c.sess == s {
			c.sess, mine = nil, true
		}
	}
	u.mu.Unlock()
	if mine {
		if cause != nil {
			u.log.Warn("connection lost", slog.Any("cause", cause))
		}
		_ = s.Close()
		u.barriers.forget(s)
	}
}

func (u *Upstream) transport() mcp.Transport {
	if u.opts.URL != "" {
		client := &http.Client{Transport: markingTransport{base: headerTransport{base: u.httpTransport(), header: u.opts.Header}, reached: u.reachedMark}}
		return &mcp.StreamableClientTransport{Endpoint: u.opts.URL, HTTPClient: client, MaxRetries: 1}
	}
	cmd := exec.Command(u.opts.Command[0], u.opts.Command[1:]...)
	cmd.Env = childEnv(os.LookupEnv, u.opts.InheritEnv, u.opts.Env)
	cmd.Dir = u.opts.Dir
	cmd.Stderr = u.opts.Stderr
	stopWithParent(cmd)
	return &barrierTransport{Transport: &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, st: newBarrierState()}
}

// minimalEnv is what every stdio server inherits of the gateway's
// environment, when set.
var minimalEnv = []string{"PATH", "HOME", "LANG", "TMPDIR"}

// childEnv is a stdio server's whole environment: minimalEnv and inherit
// as lookup finds them, then env. It is never nil, since a nil environment
// would make exec pass on the gateway's.
func childEnv(lookup func(string) (string, bool), inherit []string, env map[string]string) []string {
	out := make([]string, 0, len(minimalEnv)+len(inherit)+len(env))
	seen := map[string]bool{}
	for _, names := range [][]string{minimalEnv, inherit} {
		for _, k := range names {
			if _, set := env[k]; set || seen[k] {
				continue
			}
			seen[k] = true
			if v, ok := lookup(k); ok {
				out = append(out, k+"="+v)
			}
		}
	}
	for _, k := range sortedNames(env) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// httpTransport is the upstream's connection pool, kept across
// reconnections. Calls run in parallel, so it keeps as many idle
// connections as calls are likely in flight instead of the default two.
func (u *Upstream) httpTransport() http.RoundTripper {
	u.transportOnce.Do(func() {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		u.pool = t
	})
	return u.pool
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

// RoundTrip sends r with the fixed headers and its routing headers
// (Mcp-Method, Mcp-Name).
func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = routingHeaders(r)
	if len(t.header) > 0 {
		r = r.Clone(r.Context())
		for k, vs := range t.header {
			r.Header[k] = slices.Clone(vs)
		}
	}
	return t.base.RoundTrip(r)
}

// reverify runs after the upstream announced a changed tool list.
func (u *Upstream) reverify(s *mcp.ClientSession) {
	ctx, cancel := context.WithTimeout(context.Background(), u.opts.ConnectTimeout)
	defer cancel()
	if err := u.verify(ctx, s); err != nil {
		u.log.Warn("cannot verify the changed tool list", slog.Any("cause", err))
	}
}

// verify lists the upstream's tools and compares each pinned one with its
// pin, logging every change of state with both digests.
func (u *Upstream) verify(ctx context.Context, s *mcp.ClientSession) error {
	u.verifyMu.Lock()
	defer u.verifyMu.Unlock()
	tools, err := listTools(ctx, s)
	if err != nil {
		return err
	}
	byName := make(map[string]*mcp.Tool, len(tools))
	for _, t := range tools {
		if t != nil {
			byName[t.Name] = t
		}
	}
	next := make(map[string]toolState, len(u.opts.Pins))
	for name, pin := range u.opts.Pins {
		t := byName[name]
		var st toolState
		switch d, err := Digest(t); {
		case t == nil:
			st.reason = "the upstream no longer lists it"
		case err != nil:
			st.reason = "its definition cannot be pinned: " + err.Error()
		case d != pin:
			st.seen, st.reason = d, "its definition changed since it was pinned"
		default:
			st.seen, st.ok, st.def = d, true, t
		}
		next[name] = st
	}
	u.stateMu.Lock()
	prev := u.state
	u.state = next
	u.stateMu.Unlock()
	for name, st := range next {
		if old, known := prev[name]; known && old.same(st) {
			continue
		}
		if st.ok {
			u.log.Info("tool matches its pin", slog.String("tool", name), slog.String("digest", st.seen))
			continue
		}
		u.log.Error("tool refused: TOOL_DEFINITION_CHANGED", slog.String("tool", name),
			slog.String("pinned", u.opts.Pins[name]), slog.String("seen", st.seen), slog.String("reason", st.reason))
	}
	u.verifySurface(ctx, s)
	return nil
}
