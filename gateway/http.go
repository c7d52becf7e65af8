package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// Defaults of HTTPOptions.
const (
	DefaultMaxBodyBytes   = 4 << 20
	DefaultBodyTimeout    = 30 * time.Second
	DefaultSessionTimeout = 10 * time.Minute
	DefaultMaxSessions    = 1024
	// DefaultMaxSessionsPerPrincipal is a quarter of DefaultMaxSessions:
	// no principal holds every session.
	DefaultMaxSessionsPerPrincipal = 256
	// DefaultMaxSessionsPerCaller is a quarter of
	// DefaultMaxSessionsPerPrincipal: no caller holds every session of
	// its principal.
	DefaultMaxSessionsPerCaller = 64
)

// HTTPOptions configure Gateway.Handler. Zero fields take the defaults.
type HTTPOptions struct {
	// Sessions keeps MCP sessions (Mcp-Session-Id) instead of serving every
	// request on its own.
	Sessions bool
	// MaxBodyBytes bounds one request's body; a larger one is refused with
	// 413 and a JSON-RPC error.
	MaxBodyBytes int64
	// BodyTimeout bounds the time to receive one request's body, however
	// slowly it is sent; past it the request is refused and its connection
	// closed. It is a deadline per request, not the server's ReadTimeout,
	// which would also cut the event streams of long calls and sessions.
	BodyTimeout time.Duration
	// WriteTimeout bounds the response to one POST: the call's tool and
	// projection deadlines plus a margin (default: the longest tool timeout
	// of the configuration plus two minutes). The event stream of a GET in
	// sessions mode has none: it lives as long as its session.
	WriteTimeout time.Duration
	// SessionTimeout closes a session that has received no request for it
	// (sessions mode).
	SessionTimeout time.Duration
	// MaxSessions bounds the sessions open at once (sessions mode); a new
	// one over it is refused with 503 and a JSON-RPC error.
	MaxSessions int
	// MaxSessionsPerPrincipal bounds the sessions one principal (the
	// verified bearer token's subject; without one, the principal of the
	// run token in the Toolcanon-Run-Token header; every request with
	// neither is one) has open at once, so that none can take all
	// MaxSessions; a new one over it is refused with 503 and a JSON-RPC
	// error.
	MaxSessionsPerPrincipal int
	// MaxSessionsPerCaller bounds the sessions one caller that its
	// principal's other callers can be told from (the holder of a run
	// token: its principal and run) has open at once, so that none can
	// take all MaxSessionsPerPrincipal; a new one over it is refused as
	// one over MaxSessionsPerPrincipal is.
	MaxSessionsPerCaller int
}

// Handler serves the gateway over streamable HTTP, with the bearer tokens
// of the configuration (when it lists any), and its OAuth access tokens
// (http.oauth, whose metadata it serves at MetadataPaths), checked before
// anything else, and the bounds of opts.
//
// Stateless (the default), every request stands alone, which is what lets
// several gateway processes sit behind one load balancer: a tools/call is
// answered without an initialize on the same connection, since a stateless
// server has nowhere to keep one. It is authenticated like every request.
// With opts.Sessions, a request needs the session an initialize opened.
func (g *Gateway) Handler(opts HTTPOptions) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	if opts.WriteTimeout <= 0 {
		longest := time.Duration(0)
		for _, t := range g.cfg.Tools {
			longest = max(longest, t.Definition.Timeout)
		}
		opts.WriteTimeout = longest + 2*time.Minute
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxSessionsPerPrincipal <= 0 {
		opts.MaxSessionsPerPrincipal = DefaultMaxSessionsPerPrincipal
	}
	if opts.MaxSessionsPerCaller <= 0 {
		opts.MaxSessionsPerCaller = DefaultMaxSessionsPerCaller
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.server },
		&mcp.StreamableHTTPOptions{Stateless: !opts.Sessions, SessionTimeout: opts.SessionTimeout,
			// 2026-07-28 and later: a client that closes the POST cancels it.
			PropagateRequestCancellation: true,
			// A browser's request from another origin is refused (403), as
			// a foreign Host on loopback is.
			CrossOriginProtection: http.NewCrossOriginProtection()})
	var h http.Handler = &bounded{next: sdk, opts: opts, server: g.server, h: g.h,
		owners: map[string]sessionOwner{}, openingBy: map[string]int{},
		openingCaller: map[string]int{}}
	// What reaches here passed authentication (if any is configured).
	h = authenticated{h}
	switch toks := g.cfg.HTTP.BearerTokens; {
	case g.oauth != nil:
		h = g.oauth.authenticate(h, toks)
	case len(toks) > 0:
		h = auth.RequireBearerToken(tokenVerifier(toks), nil)(h)
	}
	return BoundBodies(CloseUnauthenticated(g.oauth.withMetadata(jsonErrors{h})), opts.BodyTimeout, opts.MaxBodyBytes)
}

// CloseUnauthenticated closes the connection after every answer h gives to
// a request that did not pass Handler's authentication (a 401, a path
// nobody serves): a client without a token holds no connection open
// between requests. Handler applies it; a server that routes other paths
// beside Handler wraps its whole router too.
func CloseUnauthenticated(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Go's server closes after an answer whose header says so;
		// authenticated takes it back.
		w.Header().Set("Connection", "close")
		h.ServeHTTP(w, r)
	})
}

// OnAuthenticated returns a context in which Handler calls f each time a
// request passes authentication (every request, when the configuration
// lists no bearer tokens). A server gives it to the context of each
// connection (http.Server.ConnContext) to learn which connections have
// authenticated, e.g. to hold the others to a shorter timeout.
func OnAuthenticated(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, onAuthKey{}, f)
}

type onAuthKey struct{}

// authenticated serves a request that passed authentication: its
// connection stays open (CloseUnauthenticated), and is told (OnAuthenticated).
type authenticated struct{ next http.Handler }

func (a authenticated) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Del("Connection")
	if f, ok := r.Context().Value(onAuthKey{}).(func()); ok {
		f()
	}
	a.next.ServeHTTP(w, r)
}

// BoundBodies bounds the body of every request h serves, before anything
// reads it: at most maxBytes bytes, received within timeout. A handler
// that answers without reading a body (a request refused before it is
// authenticated, a path nobody serves) would otherwise leave the server
// reading what is left of it before it answers, with no deadline: a
// client sending a byte now and then would hold its connection for ever.
// The deadline ends when h clears it (Handler does once it has read the
// body); an event stream, whose request has no body, gets none. Handler
// applies it; a server that routes other paths beside Handler wraps its
// whole router too.
func BoundBodies(h http.Handler, timeout time.Duration, maxBytes int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
			r.Body = http.MaxBytesReader(w, r.Body, maxBytes)
		}
		h.ServeHTTP(w, r)
	})
}

// jsonErrors answers, in place of a plain-text error of the SDK or of the
// bearer-token check (whose texts may carry a decoder's message), a
// JSON-RPC error of id null with the same status and a fixed message; a
// 401 also says which scheme it wants (WWW-Authenticate: Bearer, RFC 6750).
type jsonErrors struct{ next http.Handler }

func (j jsonErrors) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	j.next.ServeHTTP(&errorWriter{ResponseWriter: w}, r)
}

// errorWriter is jsonErrors' ResponseWriter.
type errorWriter struct {
	http.ResponseWriter
	replaced bool // the error body was written: the handler's is dropped
}

func (e *errorWriter) WriteHeader(status int) {
	h := e.Header()
	if status < 400 || e.replaced || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		e.ResponseWriter.WriteHeader(status)
		return
	}
	e.replaced = true
	h.Del("Content-Length")
	if status == http.StatusUnauthorized && h.Get("WWW-Authenticate") == "" {
		h.Set("WWW-Authenticate", "Bearer")
	}
	code := int64(jsonrpc.CodeInvalidRequest)
	if status >= 500 {
		code = jsonrpc.CodeInternalError
	}
	httpRPCError(e.ResponseWriter, status, code, httpErrorMessage(status))
}

func (e *errorWriter) Write(p []byte) (int, error) {
	if e.replaced {
		return len(p), nil
	}
	return e.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (deadlines,
// flushes of event streams).
func (e *errorWriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }

// httpErrorMessage is the fixed message of an HTTP error status.
func httpErrorMessage(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "Bad request: not a request this MCP endpoint accepts (its Accept and Content-Type headers, Mcp-Session-Id, protocol version or message)"
	case http.StatusUnauthorized:
		return "Unauthorized: a valid bearer token is required"
	case http.StatusForbidden:
		return "Forbidden: the Host header or the request's origin is not allowed"
	case http.StatusNotFound:
		return "Not found: no such session (it expired or was closed); initialize a new one"
	case http.StatusMethodNotAllowed:
		return "Method not allowed"
	case http.StatusConflict:
		return "Conflict: the session's event stream is open already"
	case http.StatusRequestEntityTooLarge:
		return "Request entity too large"
	case http.StatusUnsupportedMediaType:
		return "Unsupported media type: Content-Type must be application/json"
	}
	return http.StatusText(status)
}

// bounded reads each request's body (within the bounds BoundBodies set)
// before the SDK sees it, screens it, and keeps the sessions under their
// caps.
type bounded struct {
	next   http.Handler
	opts   HTTPOptions
	server *mcp.Server
	h      *handler

	mu            sync.Mutex
	opening       int                     // new sessions being opened
	openingBy     map[string]int          // principal -> its new sessions being opened
	openingCaller map[string]int          // sessionCaller -> its new sessions being opened
	owners        map[string]sessionOwner // session id -> who opened it, of the sessions opened here
}

// sessionOwner is who opened a session: its principal and its caller (sessionCaller).
type sessionOwner struct{ principal, caller string }

func (b *bounded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if b.opts.Sessions {
		r = b.ownSessionsOnly(r)
	}
	rc := http.NewResponseController(w)
	if r.Body != nil && r.Body != http.NoBody {
		// BoundBodies, outside the token check, has set the body's deadline
		// and cap.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			if errors.As(err, new(*http.MaxBytesError)) {
				httpRPCError(w, http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest,
					"Invalid request: the body is larger than "+strconv.FormatInt(b.opts.MaxBodyBytes, 10)+" bytes")
				return
			}
			w.Header().Set("Connection", "close")
			httpRPCError(w, http.StatusRequestTimeout, jsonrpc.CodeInvalidRequest, "Invalid request: the body was not received in time")
			return
		}
		_ = rc.SetReadDeadline(time.Time{})
		// Screened as stdio screens a line: no batch (MCP 2025-06-18
		// removed them, and a call in one could not be cancelled), nothing
		// but one strict JSON-RPC message, answered with a JSON-RPC error
		// rather than a decoder's text.
		var h head
		if r.Method == http.MethodPost {
			if v := classify(body); !v.forward {
				httpRPCErrorID(w, http.StatusBadRequest, echoID(v.id), v.code, v.msg)
				return
			}
			h, _ = readHead(body)
			if !headersAgree(r.Header, h) {
				httpRPCErrorID(w, http.StatusBadRequest, echoID(h.ID), codeHeaderMismatch, headerMismatch)
				return
			}
			if !b.opts.Sessions && h.Method == "initialize" {
				w = &initializeWriter{ResponseWriter: w}
			}
			body = liftTask(body)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !b.opts.Sessions && r.Method == http.MethodPost && b.h != nil {
			var cancel *statelessCancel
			if r, cancel = b.stateless(r, h); cancel != nil {
				// Acted on only once the SDK accepted the message (202),
				// after the checks every message passes: Host, Origin,
				// Content-Type, Accept.
				aw := &acceptWriter{ResponseWriter: w}
				b.next.ServeHTTP(aw, r)
				if aw.status == http.StatusAccepted {
					b.h.cancelHTTP(r, cancel)
				}
				return
			}
		}
	}
	if r.Method == http.MethodPost {
		_ = rc.SetWriteDeadline(time.Now().Add(b.opts.WriteTimeout))
	}
	if b.opts.Sessions && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
		who, caller := b.sessionCaller(r)
		if refused := b.openFor(who, caller); refused != "" {
			httpRPCError(w, http.StatusServiceUnavailable, jsonrpc.CodeInternalError, refused)
			return
		}
		// The opening ends when the SDK answers, before the client can
		// read the answer and ask again: the session id is in its headers.
		ow := &openingWriter{ResponseWriter: w, end: func() { b.openedFor(who, caller, w.Header().Get("Mcp-Session-Id")) }}
		defer ow.finish()
		w = ow
	}
	b.next.ServeHTTP(w, r)
}

// ownSessionsOnly makes the session id of a request that names another
// caller's session (sessionCaller) one that names no session: the SDK
// answers it as it answers an id it never gave, in its own order of
// checks, so that a caller cannot tell another's session from none, nor
// reach it.
func (b *bounded) ownSessionsOnly(r *http.Request) *http.Request {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		return r
	}
	b.mu.Lock()
	owner, known := b.owners[id]
	b.mu.Unlock()
	if !known {
		return r
	}
	if _, caller := b.sessionCaller(r); owner.caller == caller {
		return r
	}
	r = r.Clone(r.Context())
	r.Header.Set("Mcp-Session-Id", "foreign-"+rand.Text())
	return r
}

// openingWriter ends an opening of a session (bounded.openFor) once, when
// its answer starts, or when the handler returns without one.
type openingWriter struct {
	http.ResponseWriter
	end  func()
	once sync.Once
}

func (o *openingWriter) finish() { o.once.Do(o.end) }

func (o *openingWriter) WriteHeader(status int) {
	o.finish()
	o.ResponseWriter.WriteHeader(status)
}

func (o *openingWriter) Write(p []byte) (int, error) {
	o.finish()
	return o.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (o *openingWriter) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// sessionCaller is who a session request comes from, as its session must
// be opened by: the verified bearer token's subject; without one, the
// caller of the run token in its header (callerOf: its principal and run),
// the one credential such a client holds; else nobody ("": the session is
// whoever's holds its id, as every request without a credential is one
// caller). principal is whose sessions it counts among: the bearer
// token's subject, else the run token's principal, else "".
func (b *bounded) sessionCaller(r *http.Request) (principal, caller string) {
	tok := auth.TokenInfoFromContext(r.Context())
	if tok != nil && tok.UserID != "" {
		return tok.UserID, "bearer\x00" + tok.UserID
	}
	c := &Call{Header: r.Header, Token: tok, RunID: "session"}
	if b.h == nil || !carriesRunToken(c) {
		return "", ""
	}
	run, err := b.h.opts.Runs.ResolveRun(r.Context(), c)
	if err != nil {
		return "", "refused\x00" + r.Header.Get(RunTokenHeader)
	}
	return run.Principal.Subject, b.h.callerOf(r.Context(), c, run)
}

// openFor counts a new session of principal who, opened by caller (a
// sessionCaller), as being opened, or says why it may not open: the server
// has MaxSessions sessions open or being opened, who MaxSessionsPerPrincipal,
// or caller, when it is one of who's callers that can be told apart (not
// who's one bearer token, nor nobody), MaxSessionsPerCaller. An opening
// counts from before the SDK opens the session until it is among the
// server's and who's (the SDK's answer starts), so that concurrent
// openings never pass a cap. Sessions that are gone (closed, timed out)
// are forgotten here.
func (b *bounded) openFor(who, caller string) (refused string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	live := map[string]bool{}
	for ss := range b.server.Sessions() {
		live[ss.ID()] = true
	}
	if len(live)+b.opening >= b.opts.MaxSessions {
		return "toolcanon: too many open sessions; try again later"
	}
	n, mine := b.openingBy[who], b.openingCaller[caller]
	for id, owner := range b.owners {
		switch {
		case !live[id]:
			delete(b.owners, id)
		case owner.principal == who:
			n++
			if owner.caller == caller {
				mine++
			}
		}
	}
	if n >= b.opts.MaxSessionsPerPrincipal {
		return "toolcanon: this principal has too many open sessions; close one or try again later"
	}
	if told := caller != "" && !strings.HasPrefix(caller, "bearer\x00"); told && mine >= b.opts.MaxSessionsPerCaller {
		return "toolcanon: this caller has too many open sessions; close one or try again later"
	}
	b.opening++
	b.openingBy[who]++
	b.openingCaller[caller]++
	return ""
}

// openedFor ends an opening of openFor: the session id the answer gave
// (none when it opened none) is who's, and caller's, from now on.
func (b *bounded) openedFor(who, caller, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id != "" {
		b.owners[id] = sessionOwner{principal: who, caller: caller}
	}
	b.opening--
	if b.openingBy[who]--; b.openingBy[who] <= 0 {
		delete(b.openingBy, who)
	}
	if b.openingCaller[caller]--; b.openingCaller[caller] <= 0 {
		delete(b.openingCaller, caller)
	}
}

// stateless reads what a stateless POST holds that no session keeps: the
// JSON-RPC id of a tools/call, put in its context so that the call can be
// cancelled, and a notifications/cancelled, returned to be passed to its
// call once the SDK has accepted it. The SDK serves the request as it
// stands.
func (b *bounded) stateless(r *http.Request, msg head) (*http.Request, *statelessCancel) {
	switch msg.Method {
	case methodCallTool:
		ctx := context.WithValue(r.Context(), statelessKey{}, true)
		if id := rpcIDString(msg.ID); id != "" {
			ctx = context.WithValue(ctx, rpcIDKey{}, id)
		}
		return r.WithContext(ctx), nil
	case notificationCancelled:
		if id := rpcIDString(msg.Params.RequestID); id != "" && len(msg.ID) == 0 {
			var meta mcp.Meta
			if len(msg.Params.Meta) > 0 && json.Unmarshal(msg.Params.Meta, &meta) != nil {
				return r, nil
			}
			return r, &statelessCancel{rpcID: id, meta: meta}
		}
	}
	return r, nil
}

// acceptWriter notes the status the SDK answered.
type acceptWriter struct {
	http.ResponseWriter
	status int
}

func (a *acceptWriter) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
	a.ResponseWriter.WriteHeader(status)
}

func (a *acceptWriter) Write(p []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (a *acceptWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// statelessKey marks, in its context, a tools/call of a stateless HTTP
// request. Such a request's session logs at info from its start (the
// SDK's level for a session it cannot remember a logging/setLevel of), so
// its call waits for its upstream's last log messages as one whose agent
// set a level does.
type statelessKey struct{}

// notificationCancelled is the method of MCP's cancel notification.
const notificationCancelled = "notifications/cancelled"

// httpRPCError answers a request with a JSON-RPC error of id null.
func httpRPCError(w http.ResponseWriter, status int, code int64, msg string) {
	httpRPCErrorID(w, status, nil, code, msg)
}

// httpRPCErrorID answers a request with a JSON-RPC error of the given id
// (null when it has none).
func httpRPCErrorID(w http.ResponseWriter, status int, id json.RawMessage, code int64, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(rpcError(id, code, msg))
}

// RPCError is the body of a JSON-RPC error of id null, code and message, as
// every HTTP failure of Handler is answered: for a server that answers
// outside Handler (e.g. a connection refused at its listener's cap).
func RPCError(code int64, msg string) []byte { return rpcError(nil, code, msg) }

// rpcError is one JSON-RPC error response, with id or null, and a newline.
func rpcError(id json.RawMessage, code int64, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b := []byte(`{"jsonrpc":"2.0","id":`)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, code, 10)
	b = append(b, `,"message":`...)
	b = strictjson.AppendQuoted(b, msg)
	return append(b, "}}\n"...)
}

// LoopbackOnly reports whether every address addr (host:port, as for
// net.Listen) can mean is a loopback address: an IP literal that is one, or
// a host name that resolves only to such. An empty host (":8080"), an
// unspecified address (0.0.0.0, [::]) and a name that does not resolve are
// not.
func LoopbackOnly(ctx context.Context, addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.IsLoopback()
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return false
	}
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return false
		}
	}
	return true
}
