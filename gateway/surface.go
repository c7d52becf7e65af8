package gateway

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/registry"
)

// surface serves the upstreams' prompts, resources and completions that a
// configuration exposes: each under the policy (prompt.get:<name>,
// resource.read:<name>), each definition pinned like a tool's, each result
// redacted and bounded like a tool result. It answers the methods itself;
// the SDK server's own prompt and resource tables stay empty.
type surface struct {
	prompts   []PromptConfig
	resources []ResourceConfig
	ups       map[string]*Upstream
	policy    registry.Policy
	runs      *StaticRuns
	h         *handler    // its caps and log; set by newServer
	server    *mcp.Server // set by newServer, for resources/updated
}

// Method names the surface answers.
const (
	methodListPrompts   = "prompts/list"
	methodGetPrompt     = "prompts/get"
	methodListResources = "resources/list"
	methodListTemplates = "resources/templates/list"
	methodReadResource  = "resources/read"

	methodSubscriptionsListen = "subscriptions/listen"
)

// listenKey carries, in the context of a subscriptions/listen request, the
// principal it acts for, found from the request itself.
type listenKey struct{}

// configure declares the capabilities the surface serves and the SDK
// handlers it answers through (completions, subscriptions).
func (sf *surface) configure(o *mcp.ServerOptions) {
	if len(sf.prompts) > 0 {
		o.Capabilities.Prompts = &mcp.PromptCapabilities{}
	}
	if len(sf.resources) > 0 {
		o.Capabilities.Resources = &mcp.ResourceCapabilities{Subscribe: true}
		o.SubscribeHandler, o.UnsubscribeHandler = sf.subscribe, sf.unsubscribe
	}
	if len(sf.prompts) > 0 || sf.hasTemplates() {
		o.Capabilities.Completions = &mcp.CompletionCapabilities{}
		o.CompletionHandler = sf.complete
	}
}

func (sf *surface) hasTemplates() bool {
	for _, r := range sf.resources {
		if r.URITemplate != "" {
			return true
		}
	}
	return false
}

// middleware answers the prompt and resource methods.
func (sf *surface) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if extra := req.GetExtra(); extra != nil {
			ctx = withCallToken(ctx, extra.TokenInfo) // the policy reads an OAuth token's scopes
		}
		switch method {
		case methodListPrompts:
			if len(sf.prompts) > 0 {
				return sf.listPrompts(ctx, req)
			}
		case methodGetPrompt:
			if r, ok := req.(*mcp.GetPromptRequest); ok && len(sf.prompts) > 0 {
				return sf.getPrompt(ctx, r)
			}
		case methodListResources:
			if len(sf.resources) > 0 {
				return sf.listResources(ctx, req)
			}
		case methodListTemplates:
			if len(sf.resources) > 0 {
				return sf.listTemplates(ctx, req)
			}
		case methodReadResource:
			if r, ok := req.(*mcp.ReadResourceRequest); ok && len(sf.resources) > 0 {
				return sf.readResource(ctx, r)
			}
		case methodSubscriptionsListen:
			// The SDK subscribes each URI of the listen request through
			// subscribe, with no HTTP request to find the principal in:
			// it is found here, and every URI checked, before.
			p, err := sf.principal(ctx, req.GetExtra(), metaOf(req.GetParams()))
			if err != nil {
				return nil, errUnauthenticated
			}
			if lp, ok := req.GetParams().(*mcp.SubscriptionsListenParams); ok && lp != nil && lp.Notifications != nil {
				for _, uri := range lp.Notifications.ResourceSubscriptions {
					if _, ok := sf.resource(ctx, p, uri); !ok {
						return nil, mcp.ResourceNotFoundError(cutText(uri, maxURIBytes))
					}
				}
			}
			ctx = context.WithValue(ctx, listenKey{}, p)
		}
		return next(ctx, method, req)
	}
}

// principal is the principal a request acts for, found as a call's is: a
// valid run token's, else the bearer token's subject, else the configured
// one. ErrUnauthenticated when there is none.
func (sf *surface) principal(ctx context.Context, extra *mcp.RequestExtra, meta mcp.Meta) (registry.Principal, error) {
	c := &Call{Meta: meta, RunID: "surface"} // a run is not what is asked: any will do
	if extra != nil {
		c.Header, c.Token = extra.Header, extra.TokenInfo
	}
	run, err := sf.runs.ResolveRun(ctx, c)
	if err != nil {
		if errors.Is(err, ErrUnauthenticated) {
			return registry.Principal{}, err
		}
		return registry.Principal{}, errors.Join(ErrUnauthenticated, err)
	}
	return run.Principal, nil
}

// allowed reports whether the policy allows p the permission, without an
// approval.
func (sf *surface) allowed(ctx context.Context, p registry.Principal, perm string) bool {
	d, err := sf.policy.Authorize(ctx, sf.runs.Project, p, perm)
	return err == nil && d.Verdict == registry.VerdictAllow
}

// Fixed answers of the surface.
var (
	errUnauthenticated = &jsonrpc.Error{Code: CodeUnauthenticated, Message: "toolcanon: not authenticated"}
	errNoPrompt        = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "toolcanon: no such prompt"}
)

// failure is the JSON-RPC error of a refused or failed request: a fixed
// message naming the stable code, with the code and its hint as data.
func failure(code canonical.Code) *jsonrpc.Error {
	rpc := int64(jsonrpc.CodeInternalError)
	if code == canonical.CodeInvalidInput {
		rpc = jsonrpc.CodeInvalidParams
	}
	data, _ := jsonMarshal(map[string]string{"error_code": string(code), "hint": boundary.Hint(code)})
	return &jsonrpc.Error{Code: rpc, Message: "toolcanon: " + string(code) + ": " + boundary.Hint(code), Data: data}
}

// fail logs a refused or failed request for the operator and returns the
// agent's answer.
func (sf *surface) fail(ctx context.Context, method, name string, err error) error {
	code := canonical.CodeOf(err)
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc) && !transportFailed(err):
		// The upstream refused: its words are for the operator only.
		code = canonical.CodeExecutionFailed
		if rpc.Code == jsonrpc.CodeInvalidParams {
			code = canonical.CodeInvalidInput
		}
	case !code.Valid():
		code = canonical.CodeExecutionFailed
	}
	sf.h.log.LogAttrs(ctx, slog.LevelWarn, "request refused or failed", slog.String("method", method),
		slog.String("name", name), slog.String("code", string(code)), slog.String("cause", causeText(err)))
	return failure(code)
}

// admit runs f for principal p under the caps of calls in flight.
func (sf *surface) admit(p registry.Principal, f func() error) error {
	release, err := sf.h.caps.acquire(p.Subject, "", 0, time.Now())
	if err != nil {
		return err
	}
	defer release()
	return f()
}

// prompt returns the configured prompt name, when p may get it.
func (sf *surface) prompt(ctx context.Context, p registry.Principal, name string) (PromptConfig, bool) {
	for _, pc := range sf.prompts {
		if pc.Name == name {
			return pc, sf.allowed(ctx, p, PromptPermissionPrefix+pc.Name)
		}
	}
	return PromptConfig{}, false
}

func (sf *surface) listPrompts(ctx context.Context, req mcp.Request) (mcp.Result, error) {
	p, err := sf.principal(ctx, req.GetExtra(), metaOf(req.GetParams()))
	if err != nil {
		return nil, errUnauthenticated
	}
	out := &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{}}
	for _, pc := range sf.prompts {
		if !sf.allowed(ctx, p, PromptPermissionPrefix+pc.Name) {
			continue
		}
		st, err := sf.ups[pc.Upstream].checkPin("prompt", pc.UpstreamPrompt)
		if err != nil {
			continue
		}
		def := *st.prompt
		def.Name, def.Meta = pc.Name, nil
		out.Prompts = append(out.Prompts, &def)
	}
	cacheable(&out.Cacheable)
	return out, nil
}

func (sf *surface) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (mcp.Result, error) {
	if req.Params == nil {
		return nil, errNoPrompt
	}
	p, err := sf.principal(ctx, req.Extra, req.Params.Meta)
	if err != nil {
		return nil, errUnauthenticated
	}
	pc, ok := sf.prompt(ctx, p, req.Params.Name)
	if !ok {
		return nil, errNoPrompt // a prompt the principal may not get is one it cannot know
	}
	u := sf.ups[pc.Upstream]
	st, err := u.checkPin("prompt", pc.UpstreamPrompt)
	if err == nil {
		err = checkPromptArgs(st.prompt, req.Params.Arguments)
	}
	var res *mcp.GetPromptResult
	if err == nil {
		err = sf.admit(p, func() error {
			return u.surfaceCall(ctx, func(ctx context.Context, s *mcp.ClientSession) error {
				var err error
				res, err = s.GetPrompt(ctx, &mcp.GetPromptParams{Name: pc.UpstreamPrompt, Arguments: req.Params.Arguments})
				return err
			})
		})
	}
	if err != nil {
		return nil, sf.fail(ctx, methodGetPrompt, pc.Name, err)
	}
	return projectPrompt(res, pc.Limits), nil
}

// Bounds of what an agent passes to a prompt or a completion.
const (
	maxPromptArgs      = 64
	maxPromptArgsBytes = 64 << 10
)

// checkPromptArgs refuses arguments the pinned definition does not name,
// or more than the bounds, as INVALID_INPUT.
func checkPromptArgs(def *mcp.Prompt, args map[string]string) error {
	if len(args) > maxPromptArgs {
		return canonical.Errorf(canonical.CodeInvalidInput, "gateway: %d prompt arguments, at most %d", len(args), maxPromptArgs)
	}
	known := map[string]bool{}
	for _, a := range def.Arguments {
		if a != nil {
			known[a.Name] = true
		}
	}
	n := 0
	for k, v := range args {
		if !known[k] {
			return canonical.Errorf(canonical.CodeInvalidInput, "gateway: the prompt takes no argument %q", cutText(k, 64))
		}
		n += len(k) + len(v)
	}
	if n > maxPromptArgsBytes {
		return canonical.Errorf(canonical.CodeInvalidInput, "gateway: %d bytes of prompt arguments, at most %d", n, maxPromptArgsBytes)
	}
	return nil
}

// resource returns the configured resource or template that serves uri,
// when p may read it; a URI no entry serves, or one p may not read, is not
// found.
func (sf *surface) resource(ctx context.Context, p registry.Principal, uri string) (ResourceConfig, bool) {
	if uri == "" || len(uri) > maxURIBytes {
		return ResourceConfig{}, false
	}
	for _, rc := range sf.resources {
		if rc.URI == uri {
			return rc, sf.allowed(ctx, p, ResourcePermissionPrefix+rc.Name)
		}
	}
	for _, rc := range sf.resources {
		if rc.tmpl != nil && rc.tmpl.Match(uri) != nil {
			return rc, sf.allowed(ctx, p, ResourcePermissionPrefix+rc.Name)
		}
	}
	return ResourceConfig{}, false
}

func (sf *surface) listResources(ctx context.Context, req mcp.Request) (mcp.Result, error) {
	p, err := sf.principal(ctx, req.GetExtra(), metaOf(req.GetParams()))
	if err != nil {
		return nil, errUnauthenticated
	}
	out := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	for _, rc := range sf.resources {
		if rc.URI == "" || !sf.allowed(ctx, p, ResourcePermissionPrefix+rc.Name) {
			continue
		}
		r := &mcp.Resource{URI: rc.URI, Name: rc.Name}
		if l := sf.ups[rc.Upstream].listedResource(rc.URI); l != nil {
			// Not pinned: what the upstream says of it is third-party text.
			r.Name, r.Title = cutText(l.Name, 256), redactedText(l.Title, 256)
			r.Description, r.MIMEType, r.Size = redactedText(l.Description, 1024), cutText(l.MIMEType, 128), l.Size
		}
		out.Resources = append(out.Resources, r)
	}
	cacheable(&out.Cacheable)
	return out, nil
}

func (sf *surface) listTemplates(ctx context.Context, req mcp.Request) (mcp.Result, error) {
	p, err := sf.principal(ctx, req.GetExtra(), metaOf(req.GetParams()))
	if err != nil {
		return nil, errUnauthenticated
	}
	out := &mcp.ListResourceTemplatesResult{ResourceTemplates: []*mcp.ResourceTemplate{}}
	for _, rc := range sf.resources {
		if rc.URITemplate == "" || !sf.allowed(ctx, p, ResourcePermissionPrefix+rc.Name) {
			continue
		}
		st, err := sf.ups[rc.Upstream].checkPin("resource_template", rc.URITemplate)
		if err != nil {
			continue
		}
		def := *st.tmpl
		def.Meta = nil
		out.ResourceTemplates = append(out.ResourceTemplates, &def)
	}
	cacheable(&out.Cacheable)
	return out, nil
}

func (sf *surface) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (mcp.Result, error) {
	if req.Params == nil {
		return nil, mcp.ResourceNotFoundError("")
	}
	uri := req.Params.URI
	p, err := sf.principal(ctx, req.Extra, req.Params.Meta)
	if err != nil {
		return nil, errUnauthenticated
	}
	rc, ok := sf.resource(ctx, p, uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(cutText(uri, maxURIBytes))
	}
	u := sf.ups[rc.Upstream]
	if rc.URITemplate != "" {
		_, err = u.checkPin("resource_template", rc.URITemplate)
	}
	var res *mcp.ReadResourceResult
	if err == nil {
		err = sf.admit(p, func() error {
			return u.surfaceCall(ctx, func(ctx context.Context, s *mcp.ClientSession) error {
				var err error
				res, err = s.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				return err
			})
		})
	}
	if err != nil {
		return nil, sf.fail(ctx, methodReadResource, rc.Name, err)
	}
	return projectResource(res, rc.Limits), nil
}

// maxCompletionValues bounds the values of one completion, as MCP does.
const maxCompletionValues = 100

func (sf *surface) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	ref := req.Params.Ref
	p, err := sf.principal(ctx, req.Extra, req.Params.Meta)
	if err != nil {
		return nil, errUnauthenticated
	}
	fwd := *req.Params
	fwd.Meta = nil
	var u *Upstream
	name := ""
	switch ref.Type {
	case "ref/prompt":
		pc, ok := sf.prompt(ctx, p, ref.Name)
		if !ok {
			return nil, errNoPrompt
		}
		u, name = sf.ups[pc.Upstream], pc.Name
		st, err := u.checkPin("prompt", pc.UpstreamPrompt)
		if err == nil {
			err = checkPromptArgs(st.prompt, map[string]string{req.Params.Argument.Name: req.Params.Argument.Value})
		}
		if err != nil {
			return nil, sf.fail(ctx, "completion/complete", name, err)
		}
		fwd.Ref = &mcp.CompleteReference{Type: "ref/prompt", Name: pc.UpstreamPrompt}
	case "ref/resource":
		var rc ResourceConfig
		ok := false
		for _, r := range sf.resources {
			if r.URITemplate != "" && r.URITemplate == ref.URI {
				rc, ok = r, sf.allowed(ctx, p, ResourcePermissionPrefix+r.Name)
			}
		}
		if !ok {
			return nil, mcp.ResourceNotFoundError(cutText(ref.URI, maxURIBytes))
		}
		u, name = sf.ups[rc.Upstream], rc.Name
		if _, err := u.checkPin("resource_template", rc.URITemplate); err != nil {
			return nil, sf.fail(ctx, "completion/complete", name, err)
		}
		fwd.Ref = &mcp.CompleteReference{Type: "ref/resource", URI: rc.URITemplate}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "toolcanon: a completion refers to a prompt or a resource template"}
	}
	if c := fwd.Context; c != nil && len(c.Arguments) > maxPromptArgs {
		return nil, sf.fail(ctx, "completion/complete", name, canonical.Errorf(canonical.CodeInvalidInput, "gateway: %d context arguments", len(c.Arguments)))
	}
	var res *mcp.CompleteResult
	err = sf.admit(p, func() error {
		return u.surfaceCall(ctx, func(ctx context.Context, s *mcp.ClientSession) error {
			var err error
			res, err = s.Complete(ctx, &fwd)
			return err
		})
	})
	if err != nil {
		return nil, sf.fail(ctx, "completion/complete", name, err)
	}
	return projectCompletion(res), nil
}

// subscribe holds the resource's subscription upstream for the agent's
// session, when its principal may read it.
func (sf *surface) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	p, listen := ctx.Value(listenKey{}).(registry.Principal)
	if !listen {
		var err error
		if p, err = sf.principal(ctx, req.Extra, req.Params.Meta); err != nil {
			return errUnauthenticated
		}
	}
	rc, ok := sf.resource(ctx, p, req.Params.URI)
	if !ok {
		return mcp.ResourceNotFoundError(cutText(req.Params.URI, maxURIBytes))
	}
	if err := sf.ups[rc.Upstream].subscribe(ctx, req.Session, req.Params.URI); err != nil {
		return sf.fail(ctx, "resources/subscribe", rc.Name, err)
	}
	return nil
}

// unsubscribe releases the agent session's subscription.
func (sf *surface) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	for _, u := range sf.ups {
		u.unsubscribe(ctx, req.Session, req.Params.URI)
	}
	return nil
}

// updated passes an upstream's resources/updated to the agents' sessions
// subscribed to uri (the SDK keeps who subscribed; each was allowed to read
// it when it did).
func (sf *surface) updated(uri string) {
	if sf.server == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), relayTimeout)
	defer cancel()
	_ = sf.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
}

// metaOf returns the _meta of a request's params, or nil.
func metaOf(p mcp.Params) mcp.Meta {
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil // params are optional for the list methods
	}
	return p.GetMeta()
}
