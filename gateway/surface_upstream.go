package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/registry"
)

// PromptDigest returns the pin of an upstream prompt: "sha256:" and the hex
// SHA-256 of the RFC 8785 form of {"arguments": [{"description", "name",
// "required"}…], "description", "name"}: what the model is told and what
// it may pass. Titles and icons are not pinned.
func PromptDigest(p *mcp.Prompt) (string, error) {
	if p == nil {
		return "", canonical.Errorf(canonical.CodeInvalidArgument, "gateway: no prompt to digest")
	}
	type arg struct {
		Description string `json:"description"`
		Name        string `json:"name"`
		Required    bool   `json:"required"`
	}
	args := make([]arg, 0, len(p.Arguments))
	for _, a := range p.Arguments {
		if a != nil {
			args = append(args, arg{a.Description, a.Name, a.Required})
		}
	}
	return pinDigest(struct {
		Arguments   []arg  `json:"arguments"`
		Description string `json:"description"`
		Name        string `json:"name"`
	}{args, p.Description, p.Name})
}

// TemplateDigest returns the pin of an upstream resource template:
// "sha256:" and the hex SHA-256 of the RFC 8785 form of {"description",
// "mimeType", "name", "uriTemplate"}. Titles, icons and annotations are not
// pinned.
func TemplateDigest(t *mcp.ResourceTemplate) (string, error) {
	if t == nil {
		return "", canonical.Errorf(canonical.CodeInvalidArgument, "gateway: no resource template to digest")
	}
	return pinDigest(struct {
		Description string `json:"description"`
		MIMEType    string `json:"mimeType"`
		Name        string `json:"name"`
		URITemplate string `json:"uriTemplate"`
	}{t.Description, t.MIMEType, t.Name, t.URITemplate})
}

func pinDigest(v any) (string, error) {
	doc, err := json.Marshal(v)
	if err != nil {
		return "", canonical.Wrap(canonical.CodeInvalidArgument, err, "gateway: the definition is not JSON")
	}
	c, err := registry.Canonicalize(doc)
	if err != nil {
		return "", canonical.Wrap(canonical.CodeInvalidArgument, err, "gateway: the definition is not strict JSON")
	}
	sum := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// maxUpstreamListing bounds the prompts, templates and resources read from
// one upstream listing.
const maxUpstreamListing = 1024

// surfaceState is what the last verification found of an upstream's
// pinned prompts and templates and of its listed resources.
type surfaceState struct {
	prompts   map[string]pinState      // by upstream prompt name
	templates map[string]pinState      // by URI template
	resources map[string]*mcp.Resource // listed resources, by URI (those the configuration exposes)
}

// pinState is what one verification found of a pinned prompt or template.
type pinState struct {
	ok     bool
	seen   string
	reason string
	prompt *mcp.Prompt
	tmpl   *mcp.ResourceTemplate
}

func (s pinState) same(o pinState) bool {
	return s.ok == o.ok && s.seen == o.seen && s.reason == o.reason
}

// verifySurface lists the upstream's prompts, resource templates and
// resources when the gateway exposes any, and compares each pinned one with
// its pin, logging every change of state with both digests. An upstream
// that does not offer prompts or resources has none: every pinned one is
// refused as gone.
func (u *Upstream) verifySurface(ctx context.Context, s *mcp.ClientSession) {
	o := u.opts
	if len(o.PromptPins) == 0 && len(o.TemplatePins) == 0 && len(o.ResourceURIs) == 0 {
		return
	}
	caps := &mcp.ServerCapabilities{}
	if ir := s.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	prompts := map[string]*mcp.Prompt{}
	if len(o.PromptPins) > 0 && caps.Prompts != nil {
		if err := listInto(ctx, s.Prompts(ctx, nil), func(p *mcp.Prompt) { prompts[p.Name] = p }); err != nil {
			u.log.Warn("cannot list the upstream's prompts", slog.Any("cause", err))
		}
	}
	templates := map[string]*mcp.ResourceTemplate{}
	resources := map[string]*mcp.Resource{}
	if caps.Resources != nil {
		if len(o.TemplatePins) > 0 {
			if err := listInto(ctx, s.ResourceTemplates(ctx, nil), func(t *mcp.ResourceTemplate) { templates[t.URITemplate] = t }); err != nil {
				u.log.Warn("cannot list the upstream's resource templates", slog.Any("cause", err))
			}
		}
		if len(o.ResourceURIs) > 0 {
			want := map[string]bool{}
			for _, uri := range o.ResourceURIs {
				want[uri] = true
			}
			if err := listInto(ctx, s.Resources(ctx, nil), func(r *mcp.Resource) {
				if want[r.URI] {
					resources[r.URI] = r
				}
			}); err != nil {
				u.log.Warn("cannot list the upstream's resources", slog.Any("cause", err))
			}
		}
	}
	next := surfaceState{prompts: map[string]pinState{}, templates: map[string]pinState{}, resources: resources}
	for name, pin := range o.PromptPins {
		p := prompts[name]
		var st pinState
		d, err := PromptDigest(p)
		switch {
		case p == nil:
			st.reason = "the upstream no longer lists it"
		case err != nil:
			st.reason = "its definition cannot be pinned: " + err.Error()
		case d != pin:
			st.seen, st.reason = d, "its definition changed since it was pinned"
		default:
			st.seen, st.ok, st.prompt = d, true, p
		}
		next.prompts[name] = st
	}
	for uriTmpl, pin := range o.TemplatePins {
		t := templates[uriTmpl]
		var st pinState
		d, err := TemplateDigest(t)
		switch {
		case t == nil:
			st.reason = "the upstream no longer lists it"
		case err != nil:
			st.reason = "its definition cannot be pinned: " + err.Error()
		case d != pin:
			st.seen, st.reason = d, "its definition changed since it was pinned"
		default:
			st.seen, st.ok, st.tmpl = d, true, t
		}
		next.templates[uriTmpl] = st
	}
	u.stateMu.Lock()
	prev := u.surf
	u.surf.prompts, u.surf.templates, u.surf.resources = next.prompts, next.templates, next.resources
	u.stateMu.Unlock()
	logChanges := func(kind string, prev, next map[string]pinState, pins map[string]string) {
		for name, st := range next {
			if old, known := prev[name]; known && old.same(st) {
				continue
			}
			if st.ok {
				u.log.Info(kind+" matches its pin", slog.String(kind, name), slog.String("digest", st.seen))
				continue
			}
			u.log.Error(kind+" refused: TOOL_DEFINITION_CHANGED", slog.String(kind, name),
				slog.String("pinned", pins[name]), slog.String("seen", st.seen), slog.String("reason", st.reason))
		}
	}
	logChanges("prompt", prev.prompts, next.prompts, o.PromptPins)
	logChanges("resource_template", prev.templates, next.templates, o.TemplatePins)
}

// listInto reads at most maxUpstreamListing items of a listing into add.
func listInto[T any](ctx context.Context, seq func(func(*T, error) bool), add func(*T)) error {
	n := 0
	var err error
	seq(func(v *T, e error) bool {
		if e != nil {
			err = e
			return false
		}
		if n++; n > maxUpstreamListing {
			err = fmt.Errorf("gateway: the upstream lists more than %d", maxUpstreamListing)
			return false
		}
		if v != nil {
			add(v)
		}
		return ctx.Err() == nil
	})
	return err
}

// checkPin says whether the pinned prompt (kind "prompt") or template may
// be used: nil when its last verification matched its pin (the returned
// definition is the upstream's), TOOL_DEFINITION_CHANGED otherwise, also
// before any verification.
func (u *Upstream) checkPin(kind, name string) (pinState, error) {
	u.stateMu.RLock()
	m := u.surf.prompts
	if kind != "prompt" {
		m = u.surf.templates
	}
	st, known := m[name]
	u.stateMu.RUnlock()
	switch {
	case !known:
		return st, canonical.Errorf(canonical.CodeToolDefinitionChanged, "gateway: upstream %q %s %q is not verified yet", u.opts.Name, kind, name)
	case !st.ok:
		return st, canonical.Errorf(canonical.CodeToolDefinitionChanged, "gateway: upstream %q %s %q: %s", u.opts.Name, kind, name, st.reason)
	}
	return st, nil
}

// listedResource returns the upstream's listing of the resource uri, or nil.
func (u *Upstream) listedResource(uri string) *mcp.Resource {
	u.stateMu.RLock()
	defer u.stateMu.RUnlock()
	return u.surf.resources[uri]
}

// surfaceCall runs f on the upstream's session, connecting first if
// needed, bounded by the connection timeout; a failure to reach the
// upstream is UPSTREAM_UNAVAILABLE.
func (u *Upstream) surfaceCall(ctx context.Context, f func(ctx context.Context, s *mcp.ClientSession) error) error {
	s, err := u.session(ctx)
	if err != nil {
		return canonical.Wrap(canonical.CodeUpstreamUnavailable, err, "gateway: upstream unreachable")
	}
	cctx, cancel := withoutValues(ctx)
	defer cancel()
	cctx, cancelT := context.WithTimeout(cctx, surfaceTimeout)
	defer cancelT()
	err = f(cctx, s)
	if err != nil && ctx.Err() == nil && transportFailed(err) {
		u.drop(s, err)
		return canonical.Wrap(canonical.CodeUpstreamUnavailable, err, "gateway: upstream connection failed")
	}
	return err
}

// subscribe holds a subscription to uri upstream for one more agent
// session; the first subscribes upstream. ss's end releases what it holds.
func (u *Upstream) subscribe(ctx context.Context, ss *mcp.ServerSession, uri string) error {
	u.subMu.Lock()
	defer u.subMu.Unlock()
	if u.bySession[ss][uri] {
		return nil // held already
	}
	if u.subs == nil {
		u.subs = map[string]int{}
	}
	if u.subs[uri] == 0 {
		if len(u.subs) >= maxSubscriptions {
			return canonical.Errorf(canonical.CodeRateLimited, "gateway: upstream %q holds %d subscriptions, the cap", u.opts.Name, maxSubscriptions)
		}
		if err := u.surfaceCall(ctx, func(ctx context.Context, s *mcp.ClientSession) error {
			return s.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		}); err != nil {
			return err
		}
	}
	u.subs[uri]++
	u.sessionSubs(ss)[uri] = true
	return nil
}

// unsubscribe releases one agent session's subscription to uri; the last
// unsubscribes upstream.
func (u *Upstream) unsubscribe(ctx context.Context, ss *mcp.ServerSession, uri string) {
	u.subMu.Lock()
	defer u.subMu.Unlock()
	held := u.bySession[ss]
	if !held[uri] {
		return
	}
	delete(held, uri)
	// The request may end with the subscription (a subscriptions/listen
	// closed): the upstream is told all the same.
	u.release(context.WithoutCancel(ctx), uri)
}

// release drops one hold of uri; the last unsubscribes upstream. subMu is
// held.
func (u *Upstream) release(ctx context.Context, uri string) {
	if u.subs[uri]--; u.subs[uri] > 0 {
		return
	}
	delete(u.subs, uri)
	_ = u.surfaceCall(ctx, func(ctx context.Context, s *mcp.ClientSession) error {
		return s.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
}

// sessionSubs returns the URIs ss holds here, watching ss's end the first
// time so that what it holds is released then. subMu is held.
func (u *Upstream) sessionSubs(ss *mcp.ServerSession) map[string]bool {
	if u.bySession == nil {
		u.bySession = map[*mcp.ServerSession]map[string]bool{}
	}
	held := u.bySession[ss]
	if held == nil {
		held = map[string]bool{}
		u.bySession[ss] = held
		go func() {
			_ = ss.Wait()
			u.subMu.Lock()
			defer u.subMu.Unlock()
			for uri := range u.bySession[ss] {
				u.release(context.Background(), uri)
			}
			delete(u.bySession, ss)
		}()
	}
	return held
}

// Bounds of the calls the gateway makes upstream for prompts, resources and
// completions.
const (
	surfaceTimeout   = 30 * time.Second
	maxSubscriptions = 1024
)

// surfaceSubs is what an Upstream keeps of its agents' subscriptions.
type surfaceSubs struct {
	subMu     sync.Mutex
	subs      map[string]int                         // subscriptions held upstream, by URI: how many agent sessions hold each
	bySession map[*mcp.ServerSession]map[string]bool // the URIs each agent session holds
}
