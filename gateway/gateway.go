package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/observe"
	"github.com/toolcanon/toolcanon/progress"
	"github.com/toolcanon/toolcanon/projectors/mcpresult"
	"github.com/toolcanon/toolcanon/projectors/querylog"
	"github.com/toolcanon/toolcanon/projectors/rag"
	"github.com/toolcanon/toolcanon/reaper"
	"github.com/toolcanon/toolcanon/registry"
)

// OpenOptions configure Open and Drafts.
type OpenOptions struct {
	Logger         *slog.Logger // nil discards the log
	UpstreamStderr io.Writer    // where stdio upstreams write their stderr; nil discards it
	// ConnectTimeout bounds each upstream connection attempt; default 10s.
	ConnectTimeout time.Duration
	// Observe is passed to Options.Observe.
	Observe func(ctx context.Context, call *Call, res boundary.Result, elapsed time.Duration)
	// Observer, when set, is told of every call of the gateway's boundary
	// (boundary.WithObserver), such as an otelcanon.Observer. The store's
	// own operations are observed only when the store given to Open is
	// wrapped (observe.Store).
	Observer observe.Observer
	// Caps is passed to Options.Caps.
	Caps Caps
	// Propagator, when set, is Options.Propagator and every upstream's
	// UpstreamOptions.Propagator: each call's span is the child of the
	// trace context the agent's request carries, and the upstream's
	// tools/call carries the call's.
	Propagator Propagator
	// Reaper configures the reaper the gateway runs over its store (package
	// reaper): a pass at once and then every Reaper.Interval (default
	// reaper.DefaultInterval) abandons the calls whose lease passed, in
	// every run, and logs each to Logger unless Reaper.Logger is set. It
	// stops with Close.
	Reaper reaper.Options
	// NoReaper switches the reaper off, e.g. where another host reaps the
	// store.
	NoReaper bool
	// CancelRelay is passed to Options.CancelRelay; give the Redis store
	// that replicas share (redisstore.Store) so that a cancel reaching any
	// replica stops the call on the one running it.
	CancelRelay CancelRelay
	// MaxAgentConnections is every stdio upstream's
	// UpstreamOptions.MaxAgentConnections: the most processes it runs of
	// one agent session each, for the sessions that want its messages.
	MaxAgentConnections int
	// AuditExporter, when set, runs beside the gateway until Close: an
	// audit.Exporter (module audit) draining the audit stream of the
	// gateway's store to its sink. However many gateways run one over one
	// store, the store's export lease gives one pass per interval.
	AuditExporter Service
}

// Service is what a gateway runs beside its calls until Close: Run
// returns once ctx ends.
type Service interface {
	Run(ctx context.Context) error
}

// Gateway fronts the upstream MCP servers of a Config: the listed tools
// only, each with its pinned definition, run through one boundary over one
// store. Several gateway processes over one Redis store share duplicates,
// budgets and records.
type Gateway struct {
	cfg       *Config
	b         *boundary.Boundary
	server    *mcp.Server
	h         *handler
	upstreams map[string]*Upstream
	log       *slog.Logger
	stopReap  func()       // nil without a reaper
	stopAudit func()       // nil without an audit exporter
	oauth     *oauthServer // nil without http.oauth
}

// Open builds the gateway of cfg over store and connects to every upstream,
// verifying pins. An upstream that cannot be reached now is logged and
// tried again at its first call; nothing of it is exposed unverified.
func Open(ctx context.Context, cfg *Config, store canonical.Store, opts OpenOptions) (*Gateway, error) {
	if cfg == nil || store == nil {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: a config and a store are required")
	}
	if !opts.NoReaper {
		if err := opts.Reaper.Validate(); err != nil {
			return nil, err
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	g := &Gateway{cfg: cfg, upstreams: map[string]*Upstream{}, log: log}
	ups, err := newUpstreams(cfg, opts, log)
	if err != nil {
		return nil, err
	}
	g.upstreams = ups
	defs := make([]registry.Definition, 0, len(cfg.Tools))
	for _, t := range cfg.Tools {
		defs = append(defs, t.Definition)
	}
	reg, err := registry.New(defs...)
	if err != nil {
		return nil, err
	}
	policy, err := NewStaticPolicy(cfg.Policy, cfg.Version)
	if err != nil {
		return nil, err
	}
	bindOpts := make([]boundary.Option, 0, len(cfg.Tools)+1)
	route := map[string]ToolConfig{}
	ttl := map[string]time.Duration{}
	for _, t := range cfg.Tools {
		p, err := newProjector(t.Projector)
		if err != nil {
			return nil, err
		}
		bindOpts = append(bindOpts, boundary.Bind(t.Name, t.Definition.Name, t.Definition.Version, begunTool{ups[t.Upstream].Tool(t.UpstreamTool)}, p))
		route[t.Name] = t
		if t.TTL > 0 {
			ttl[t.Name] = t.TTL
		}
	}
	if opts.Observer != nil {
		bindOpts = append(bindOpts, boundary.WithObserver(opts.Observer))
	}
	bindOpts = append(bindOpts, cfg.handleOptions()...)
	if g.b, err = boundary.New(store, reg, policy, bindOpts...); err != nil {
		return nil, err
	}
	var sf *surface
	if len(cfg.Prompts) > 0 || len(cfg.Resources) > 0 {
		sf = &surface{prompts: cfg.Prompts, resources: cfg.Resources, ups: ups, policy: policy}
		for _, u := range ups {
			u.opts.OnResourceUpdated = sf.updated
		}
	}
	hopts := Options{
		Identity: Identity{ToolCallIDKeys: cfg.Identity.ToolCallIDKeys, RunIDKeys: cfg.Identity.RunIDKeys},
		Runs: &StaticRuns{
			Project: cfg.Identity.Project, Subject: cfg.Identity.Principal, RunHeader: cfg.Identity.RunHeader,
			DefaultRun: cfg.Identity.DefaultRun, Limits: cfg.Run.Limits, TTL: cfg.Run.TTL, ToolTTL: ttl,
		},
		Guard: func(_ context.Context, tool string) error {
			t := route[tool]
			return ups[t.Upstream].Check(t.UpstreamTool)
		},
		Upstream: func(tool string) *mcp.Tool {
			t := route[tool]
			return ups[t.Upstream].Listed(t.UpstreamTool)
		},
		Observe:        opts.Observe,
		Caps:           opts.Caps,
		Propagator:     opts.Propagator,
		Logger:         log,
		Implementation: &mcp.Implementation{Name: "toolcanon-gateway", Version: "1"},
		CancelRelay:    opts.CancelRelay,
	}
	hopts.tasks = &tasks{longRunning: map[string]bool{}}
	for _, t := range cfg.Tools {
		if t.LongRunning || cfg.Upstreams[t.Upstream].LongRunning {
			hopts.tasks.longRunning[t.Name] = true
		}
	}
	runs := hopts.Runs.(*StaticRuns)
	if sf != nil {
		sf.runs = runs
		hopts.surface = sf
	}
	if rt := cfg.Identity.RunToken; rt != nil {
		if runs.RunTokens, err = rt.Verifier(); err != nil {
			return nil, err
		}
		runs.RequireRunToken = rt.Required
	}
	hopts.Visible = func(ctx context.Context, c *Call, tool string, def *registry.Tool) bool {
		return mayCall(ctx, policy, runs, c, tool, def)
	}
	if p := cfg.Progress; p != nil {
		hopts.Progress = &ProgressTools{Store: store, FactsTool: p.FactsTool, ReportTool: p.ReportTool,
			Protocol: progress.ProtocolOptions{Threshold: p.Threshold}}
	}
	if g.server, g.h, err = newServer(g.b, hopts); err != nil {
		return nil, err
	}
	if cfg.HTTP.OAuth != nil {
		var progressTools []string
		if p := hopts.Progress; p != nil {
			progressTools = []string{p.FactsTool, p.ReportTool}
		}
		g.oauth = newOAuthServer(cfg, toolPerms(g.b.Definition, progressTools), log)
	}
	if !opts.NoReaper {
		ro := opts.Reaper
		if ro.Logger == nil {
			ro.Logger = log
		}
		if g.stopReap, err = reaper.Start(store, ro); err != nil {
			return nil, err
		}
	}
	if x := opts.AuditExporter; x != nil {
		actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := x.Run(actx); err != nil && actx.Err() == nil {
				log.Error("gateway: the audit exporter stopped", "err", err)
			}
		}()
		g.stopAudit = func() { cancel(); <-done }
	}
	g.connectAll(ctx)
	return g, nil
}

func newUpstreams(cfg *Config, opts OpenOptions, log *slog.Logger) (map[string]*Upstream, error) {
	pins := map[string]map[string]string{}
	promptPins, templatePins, uris := map[string]map[string]string{}, map[string]map[string]string{}, map[string][]string{}
	for _, p := range cfg.Prompts {
		if promptPins[p.Upstream] == nil {
			promptPins[p.Upstream] = map[string]string{}
		}
		promptPins[p.Upstream][p.UpstreamPrompt] = p.Pin
	}
	for _, r := range cfg.Resources {
		switch {
		case r.URITemplate != "":
			if templatePins[r.Upstream] == nil {
				templatePins[r.Upstream] = map[string]string{}
			}
			templatePins[r.Upstream][r.URITemplate] = r.Pin
		default:
			uris[r.Upstream] = append(uris[r.Upstream], r.URI)
		}
	}
	for _, t := range cfg.Tools {
		if pins[t.Upstream] == nil {
			pins[t.Upstream] = map[string]string{}
		}
		if prev, dup := pins[t.Upstream][t.UpstreamTool]; dup && prev != t.Pin {
			return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: upstream %q tool %q is pinned twice, differently", t.Upstream, t.UpstreamTool)
		}
		pins[t.Upstream][t.UpstreamTool] = t.Pin
	}
	ups := map[string]*Upstream{}
	for name, uc := range cfg.Upstreams {
		o := UpstreamOptions{
			Name: name, Command: uc.Command, Env: uc.Env, InheritEnv: uc.InheritEnv, Dir: uc.Dir, URL: uc.URL, Pins: pins[name],
			PromptPins: promptPins[name], TemplatePins: templatePins[name], ResourceURIs: uris[name],
			ConnectTimeout: opts.ConnectTimeout, Stderr: opts.UpstreamStderr, Logger: log,
			Propagator: opts.Propagator, MaxAgentConnections: opts.MaxAgentConnections,
		}
		if uc.BearerTokenEnv != "" {
			tok := os.Getenv(uc.BearerTokenEnv)
			if tok == "" {
				return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: upstream %q: environment variable %s is empty", name, uc.BearerTokenEnv)
			}
			o.Header = http.Header{"Authorization": {"Bearer " + tok}}
		}
		u, err := NewUpstream(o)
		if err != nil {
			return nil, err
		}
		ups[name] = u
	}
	return ups, nil
}

func (g *Gateway) connectAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, u := range g.upstreams {
		if len(u.opts.Pins) == 0 && len(u.opts.PromptPins) == 0 && len(u.opts.TemplatePins) == 0 && len(u.opts.ResourceURIs) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = u.Connect(ctx) // logged by the upstream; retried at the first call
		}()
	}
	wg.Wait()
}

// Server returns the MCP server agents talk to.
func (g *Gateway) Server() *mcp.Server { return g.server }

// Boundary returns the gateway's boundary.
func (g *Gateway) Boundary() *boundary.Boundary { return g.b }

// HTTPHandler is Handler with the default bounds, stateless unless
// sessions is true.
func (g *Gateway) HTTPHandler(sessions bool) http.Handler {
	return g.Handler(HTTPOptions{Sessions: sessions})
}

// tokenVerifier accepts the tokens whose SHA-256 is listed, comparing every
// digest in constant time.
func tokenVerifier(toks []BearerToken) auth.TokenVerifier {
	return func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		sum := sha256.Sum256([]byte(token))
		found := -1
		for i := range toks {
			if subtle.ConstantTimeCompare(sum[:], toks[i].SHA256[:]) == 1 {
				found = i
			}
		}
		if found < 0 {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: toks[found].Subject, Expiration: time.Now().Add(DefaultPrincipalTTL)}, nil
	}
}

// Close stops the reaper and closes every upstream; stdio servers are
// stopped.
func (g *Gateway) Close() error {
	// Tasks still running get a moment to finish, then are cancelled:
	// their records end before the upstreams go.
	g.h.tasks.close()
	g.h.cancels.close()
	if g.stopReap != nil {
		g.stopReap()
	}
	if g.stopAudit != nil {
		g.stopAudit()
	}
	var errs []error
	for _, u := range g.upstreams {
		errs = append(errs, u.Close())
	}
	return errors.Join(errs...)
}

// newProjector builds a tool's projector from its configuration.
func newProjector(pc ProjectorConfig) (canonical.Projector, error) {
	switch pc.Kind {
	case "", "mcp":
		cfg := mcpresult.DefaultConfig()
		cfg.Limits, cfg.Media = pc.Limits, pc.Media
		return mcpresult.New(cfg)
	case "rag":
		cfg := rag.DefaultConfig()
		cfg.Limits = pc.Limits
		for k, v := range pc.Paths {
			switch k {
			case "success":
				cfg.Paths.Success = v
			case "blocks":
				cfg.Paths.Blocks = v
			case "source":
				cfg.Paths.Source = v
			case "document_id":
				cfg.Paths.DocumentID = v
			case "title":
				cfg.Paths.Title = v
			case "excerpt":
				cfg.Paths.Excerpt = []string{v}
			default:
				return nil, canonical.Errorf(canonical.CodeInvalidArgument, "rag: unknown path %q (use success, blocks, source, document_id, title, excerpt)", k)
			}
		}
		inner, err := rag.New(cfg)
		if err != nil {
			return nil, err
		}
		return mcpresult.Wrap(inner, pc.Input)
	case "querylog":
		cfg := querylog.DefaultConfig()
		cfg.Limits = pc.Limits
		if pc.SourceKind != "" {
			cfg.SourceKind = pc.SourceKind
		}
		for k, v := range pc.Paths {
			switch k {
			case "success":
				cfg.Paths.Success = v
			case "entries":
				cfg.Paths.Entries = v
			case "from":
				cfg.Paths.From = v
			case "to":
				cfg.Paths.To = v
			case "timestamp":
				cfg.Paths.Timestamp = v
			case "level":
				cfg.Paths.Level = v
			case "message":
				cfg.Paths.Message = v
			default:
				return nil, canonical.Errorf(canonical.CodeInvalidArgument, "querylog: unknown path %q (use success, entries, from, to, timestamp, level, message)", k)
			}
		}
		inner, err := querylog.New(cfg)
		if err != nil {
			return nil, err
		}
		return mcpresult.Wrap(inner, pc.Input)
	}
	return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: unknown projector %q", pc.Kind)
}

// sortedNames returns the keys of m, sorted.
func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// mayCall reports whether the policy allows the principal of a tools/list
// request every permission a call of tool asks for (tool.call:<registry
// name> and the definition's permissions; tool.call:<tool> for a progress
// tool, whose def is nil): a tool it would deny or hold for an approval is
// not listed. The principal is found as for a call: a valid run token's,
// else the bearer token's subject, else the configured one.
func mayCall(ctx context.Context, p registry.Policy, runs *StaticRuns, c *Call, tool string, def *registry.Tool) bool {
	ctx = withCallToken(ctx, c.Token)
	subject := runs.Subject
	if c.Token != nil && c.Token.UserID != "" {
		subject = c.Token.UserID
	}
	if runs.RunTokens != nil {
		if rt, ok, err := runs.runToken(c, time.Now()); err == nil && ok {
			subject = rt.Principal
		}
	}
	if subject == "" {
		return false
	}
	perms := []string{registry.CallPermissionPrefix + tool}
	if def != nil {
		perms = append([]string{registry.CallPermissionPrefix + def.Name()}, def.Permissions()...)
	}
	pr := registry.Principal{Subject: subject, ExpiresAt: time.Now().Add(DefaultPrincipalTTL)}
	for _, perm := range perms {
		d, err := p.Authorize(ctx, runs.Project, pr, perm)
		if err != nil || d.Verdict != registry.VerdictAllow {
			return false
		}
	}
	return true
}
