package boundary

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
	"slices"
	"sync"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/strictjson"
	"github.com/toolcanon/toolcanon/registry"
)

// MaxHandlesPerInput bounds the distinct handles one call's arguments may
// hold. Each is resolved through the call whose result minted it, whose raw
// response is projected again; more is INVALID_INPUT.
const MaxHandlesPerInput = 32

// HandlePolicy says into which tools a handle's value may be resolved. A
// value always may flow back into the tools of the group it came from (see
// Group; by default each tool is a group of its own). Flows opens more;
// Sinks closes tools to every handle.
type HandlePolicy struct {
	// Flows maps a group to the other groups whose tools may receive its
	// values.
	Flows map[string][]string
	// Sinks are agent-facing tool names that never receive a handle's
	// value, whatever its group: tools that can carry data out (mail,
	// webhooks, public posts, fetches of arbitrary URLs). A handle in their
	// arguments is HANDLE_FORBIDDEN.
	Sinks []string
}

// WithHandlePolicy sets the handle policy (see HandlePolicy). Groups and
// sinks that name no bound tool are INVALID_ARGUMENT at New.
func WithHandlePolicy(p HandlePolicy) Option {
	return func(b *Boundary) error {
		b.flows = map[string]map[string]bool{}
		for from, tos := range p.Flows {
			if from == "" {
				return canonical.Errorf(canonical.CodeInvalidArgument, "boundary: handle policy: a flow from an unnamed group")
			}
			b.flows[from] = map[string]bool{}
			for _, to := range tos {
				b.flows[from][to] = true
			}
		}
		b.sinks = map[string]bool{}
		for _, s := range p.Sinks {
			b.sinks[s] = true
		}
		return nil
	}
}

// Group puts the bound tools agentNames in one handle group: a value one of
// them returned may be resolved into any of them (HandlePolicy). A tool not
// grouped is a group of its own, named by its agent-facing name. An unbound
// name is INVALID_ARGUMENT at New.
func Group(group string, agentNames ...string) Option {
	return func(b *Boundary) error {
		if group == "" {
			return canonical.Errorf(canonical.CodeInvalidArgument, "boundary: an unnamed handle group")
		}
		if b.groups == nil {
			b.groups = map[string]string{}
		}
		for _, n := range agentNames {
			b.groups[n] = group
		}
		return nil
	}
}

// WithoutHandles masks values with their class alone (canonical.Placeholders:
// "<SECRET>") instead of the run's handles, and resolves no handle: text that
// looks like one reaches the tool as it is.
func WithoutHandles() Option {
	return func(b *Boundary) error { b.noHandles = true; return nil }
}

// checkHandleConfig checks, once every option has run, that groups and
// sinks name bound tools.
func (b *Boundary) checkHandleConfig() error {
	for n := range b.groups {
		if b.bindings[n] == nil {
			return canonical.Errorf(canonical.CodeInvalidArgument, "boundary: handle group of %q: no tool is bound under that name", n)
		}
	}
	for n := range b.sinks {
		if b.bindings[n] == nil {
			return canonical.Errorf(canonical.CodeInvalidArgument, "boundary: handle sink %q: no tool is bound under that name", n)
		}
	}
	return nil
}

// groupOf is the handle group of a bound tool.
func (b *Boundary) groupOf(agentName string) string {
	if g, ok := b.groups[agentName]; ok {
		return g
	}
	return agentName
}

// flowAllowed reports whether a value returned by tool from may be resolved
// into tool to.
func (b *Boundary) flowAllowed(from, to string) bool {
	if b.sinks[to] {
		return false
	}
	gf, gt := b.groupOf(from), b.groupOf(to)
	return gf == gt || b.flows[gf][gt]
}

type maskerKey struct{}

// MaskerFrom returns the Masker of the call that ctx belongs to, as the
// boundary hands it to the tool: text the tool shows the agent while it
// runs (progress, log messages) masked with it gets the same handle for a
// value as the call's result does. Outside a call, or without handles, it is
// canonical.Placeholders.
func MaskerFrom(ctx context.Context) canonical.Masker {
	if m, ok := ctx.Value(maskerKey{}).(canonical.Masker); ok {
		return m
	}
	return canonical.Placeholders
}

// handleDomain separates a handle's MAC from any other use of the run's
// secret.
const handleDomain = "toolcanon handle v1\x00"

// maxCachedValues bounds a minter's cache of values it has seen.
const maxCachedValues = 4096

// minter is the Masker of one call: it mints the run's handle of each value
// (the first HandleIDLen characters of the base64url HMAC-SHA256 of the
// value under the run's secret), remembers the ids it minted, and, when
// collecting, the value of each. It is safe for concurrent use.
type minter struct {
	mu      sync.Mutex
	mac     hash.Hash
	sum     [sha256.Size]byte
	cache   map[string]string // value -> id
	seen    map[string]bool
	ids     []string          // distinct ids minted, at most canonical.MaxHandlesPerCall
	values  map[string][]byte // id -> value, when collecting
	clashes map[string]bool   // ids minted for two different values, when collecting
	known   []known           // values resolved into the call's arguments, longest first
	masked  int               // values masked (AppendMask calls), for the audit stream
}

// known is a value resolved into a call's arguments and its handle, as the
// agent wrote it: wherever the tool's answer holds the value again, the
// agent reads the handle, whether or not the redactor recognises it.
type known struct {
	value, json []byte // the value, and as it stands escaped in a JSON string
	handle      []byte
}

// minKnownLen: shorter resolved values are not masked in the tool's
// answer on their own, where they would stand for any two letters.
const minKnownLen = 3

// withKnown makes m mask the values of r wherever they appear (maskKnown).
func (m *minter) withKnown(r *resolved) *minter {
	if r == nil {
		return m
	}
	for i, v := range r.values {
		if len(v) < minKnownLen {
			continue
		}
		m.known = append(m.known, known{value: v, json: strictjson.AppendEscaped(nil, string(v)),
			handle: canonical.AppendHandle(nil, r.kinds[i], r.ids[i])})
	}
	slices.SortFunc(m.known, func(a, b known) int { return len(b.value) - len(a.value) })
	return m
}

// maskKnown replaces in text every value resolved into the call's
// arguments by its handle; inJSON says text is JSON, whose strings hold the
// values escaped.
func (m *minter) maskKnown(text []byte, inJSON bool) []byte {
	for _, k := range m.known {
		v := k.value
		if inJSON {
			v = k.json
		}
		if bytes.Contains(text, v) {
			text = bytes.ReplaceAll(text, v, k.handle)
		}
	}
	return text
}

// MaskResolved returns text with every value resolved from a handle into
// the call's arguments replaced by that handle: a tool may hand a value
// back in a form no redactor recognises. m is the call's Masker
// (MaskerFrom); with any other Masker text is returned as it is.
func MaskResolved(m canonical.Masker, text []byte) []byte {
	if mm, ok := m.(*minter); ok && len(mm.known) > 0 {
		return mm.maskKnown(text, false)
	}
	return text
}

func newMinter(secret []byte, collect bool) *minter {
	m := &minter{mac: hmac.New(sha256.New, secret), cache: map[string]string{}, seen: map[string]bool{}}
	if collect {
		m.values, m.clashes = map[string][]byte{}, map[string]bool{}
	}
	return m
}

// AppendMask implements canonical.Masker.
func (m *minter) AppendMask(dst []byte, kind canonical.Kind, value []byte) []byte {
	if !kind.Valid() {
		kind = canonical.KindSecret
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.masked++
	id, ok := m.cache[string(value)]
	if !ok {
		id = m.id(value)
		if len(m.cache) < maxCachedValues {
			m.cache[string(value)] = id
		}
	}
	if !m.seen[id] {
		m.seen[id] = true
		if len(m.ids) < canonical.MaxHandlesPerCall {
			m.ids = append(m.ids, id)
		}
	}
	if m.values != nil {
		if v, ok := m.values[id]; !ok {
			m.values[id] = bytes.Clone(value)
		} else if !bytes.Equal(v, value) {
			m.clashes[id] = true
		}
	}
	return canonical.AppendHandle(dst, kind, id)
}

func (m *minter) id(value []byte) string {
	m.mac.Reset()
	m.mac.Write([]byte(handleDomain))
	m.mac.Write(value)
	return base64.RawURLEncoding.EncodeToString(m.mac.Sum(m.sum[:0])[:canonical.HandleIDLen*6/8])
}

// minted returns the distinct ids minted so far.
func (m *minter) minted() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.ids)
}

// value returns the value minted as id, when collecting and unambiguous.
func (m *minter) value(id string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.values[id]
	return v, ok && !m.clashes[id]
}

// handleRefs returns the distinct ids of the handles in b, in order of
// first appearance, the kind each first appears with, and whether b holds
// more than max of them.
func handleRefs(b []byte, max int) (ids []string, kinds []canonical.Kind, over bool) {
	for len(b) > 0 {
		off, n := canonical.IndexHandle(b)
		if off < 0 {
			break
		}
		kind, id, _, _ := canonical.ParseHandle(b[off:])
		if !slices.Contains(ids, id) {
			if len(ids) == max {
				return ids, kinds, true
			}
			ids, kinds = append(ids, id), append(kinds, kind)
		}
		b = b[off+n:]
	}
	return ids, kinds, false
}

// resolved is what resolving a call's handles found: the value of each id
// and the call whose raw response holds it.
type resolved struct {
	ids    []string
	kinds  []canonical.Kind // as the arguments wrote each
	calls  []string
	values [][]byte
}

// errHandleUnknown and errHandleForbidden are the causes of the refusals,
// for operators.
var (
	errHandleUnknown   = errors.New("boundary: a handle names no value of this run")
	errHandleForbidden = errors.New("boundary: a handle's value may not flow into this tool")
)

// resolveHandles finds the values of the handles ids of run, reading the
// run's handle index and projecting again the raw response of each call
// that minted one, on behalf of principal. to is the agent-facing tool the
// values are for ("" for Reveal: no flow is checked). It reads, and writes
// nothing. Its refusals are HANDLE_UNKNOWN and HANDLE_FORBIDDEN, or the
// store's RUN_FORBIDDEN and STORE_UNAVAILABLE.
func (b *Boundary) resolveHandles(ctx context.Context, runID, principal, to string, ids []string) (resolved, error) {
	r := resolved{ids: ids}
	if to != "" && b.sinks[to] {
		return r, canonical.Wrap(canonical.CodeHandleForbidden, errHandleForbidden, to+" is a handle sink")
	}
	index, ok := b.store.(canonical.HandleIndex)
	if !ok {
		return r, canonical.Wrap(canonical.CodeHandleUnknown, errHandleUnknown, "the store keeps no handle index")
	}
	var src canonical.HandleSources
	err := b.retry(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, b.storeTimeout)
		defer cancel()
		var err error
		src, err = safeHandleSources(ctx, index, runID, principal, ids)
		return err
	})
	switch canonical.CodeOf(err) {
	case "":
	case canonical.CodeNotFound:
		return r, canonical.Wrap(canonical.CodeHandleUnknown, errHandleUnknown, "the run has no calls")
	case canonical.CodeRunForbidden, canonical.CodeStoreUnavailable:
		return r, err
	default:
		return r, canonical.Wrap(canonical.CodeHandleUnknown, err, "reading the handle index")
	}
	if len(src.RunSecret) == 0 || len(src.Calls) != len(ids) || slices.Contains(src.Calls, "") {
		return r, canonical.Wrap(canonical.CodeHandleUnknown, errHandleUnknown, "not in the run's handle index")
	}
	r.calls = src.Calls
	sources := slices.Compact(slices.Sorted(slices.Values(src.Calls)))
	recs, err := b.getRecords(ctx, runID, sources)
	if err != nil {
		return r, err
	}
	minters := make(map[string]*minter, len(sources))
	for i, rec := range recs {
		if rec == nil || !rec.Referencable() {
			return r, canonical.Wrap(canonical.CodeHandleUnknown, errHandleUnknown, "the call that minted it is gone or did not succeed")
		}
		from := b.bindings[rec.Tool]
		if from == nil {
			return r, canonical.Wrap(canonical.CodeHandleUnknown, errHandleUnknown, "the tool that minted it is no longer bound")
		}
		if to != "" && !b.flowAllowed(rec.Tool, to) {
			return r, canonical.Wrap(canonical.CodeHandleForbidden, errHandleForbidden,
				"from "+rec.Tool+" (group "+b.groupOf(rec.Tool)+") into "+to+" (group "+b.groupOf(to)+")")
		}
		m, err := b.reproject(ctx, from, rec, src.RunSecret)
		if err != nil {
			return r, err
		}
		minters[sources[i]] = m
	}
	r.values = make([][]byte, len(ids))
	for i, id := range ids {
		v, ok := minters[r.calls[i]].value(id)
		if !ok {
			return r, canonical.Wrap(canonical.CodeHandleUnknown, errHandleUnknown, "the call's result holds no such value")
		}
		r.values[i] = v
	}
	return r, nil
}

// getRecords reads the records of ids with their requests and raw
// responses, with the boundary's retries.
func (b *Boundary) getRecords(ctx context.Context, runID string, ids []string) ([]*canonical.Record, error) {
	var recs []*canonical.Record
	err := b.retry(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, b.storeTimeout)
		defer cancel()
		var err error
		recs, err = safeRead(ctx, b.store, runID, ids, canonical.ReadOptions{Request: true, Raw: true})
		return err
	})
	if err != nil && canonical.CodeOf(err) != canonical.CodeStoreUnavailable {
		err = canonical.Wrap(canonical.CodeHandleUnknown, err, "reading the calls that minted the handles")
	}
	return recs, err
}

// reproject projects a recorded call's raw response again, as its
// invocation did, and returns the minter that saw every value it masked. A
// value is taken for a handle only when its own keyed id is the handle's:
// whatever the projection does, the value is the one the agent saw as that
// handle (two values of one projection with one id resolve nothing).
func (b *Boundary) reproject(ctx context.Context, bd *binding, rec *canonical.Record, secret []byte) (*minter, error) {
	input, ok := strictjson.Member(rec.Request, "input")
	if !ok {
		return nil, canonical.Wrap(canonical.CodeHandleUnknown, errHandleUnknown, "the minting call's request holds no input")
	}
	m := newMinter(secret, true)
	call := canonical.Call{RunID: rec.RunID, ToolCallID: rec.ToolCallID, Tool: rec.Tool, Input: input, Mask: m}
	if _, err := project(ctx, bd.projector, b.projTimeout, call, rec.Raw); err != nil {
		return nil, canonical.Wrap(canonical.CodeHandleUnknown, err, "projecting the minting call again")
	}
	return m, nil
}

// substitute returns input with every handle of r replaced by its value,
// escaped for a JSON string (handles stand only inside strings).
func substitute(input []byte, r resolved) []byte {
	out, _ := replaceHandles(input, r, func(out, v []byte) []byte { return strictjson.AppendEscaped(out, string(v)) })
	return out
}

// replaceHandles returns text with each handle of r appended by put in the
// place of its value, and how many it replaced; a handle r does not know
// stays as it is.
func replaceHandles(text []byte, r resolved, put func(out, value []byte) []byte) ([]byte, int) {
	out, n := make([]byte, 0, len(text)+64), 0
	for len(text) > 0 {
		off, l := canonical.IndexHandle(text)
		if off < 0 {
			break
		}
		_, id, _, _ := canonical.ParseHandle(text[off:])
		out = append(out, text[:off]...)
		if i := slices.Index(r.ids, id); i >= 0 {
			out = put(out, r.values[i])
			n++
		} else {
			out = append(out, text[off:off+l]...)
		}
		text = text[off+l:]
	}
	return append(out, text...), n
}

// resolveInput resolves the handles in a call's canonical input (as the
// model sent it): the input the tool gets, canonical again and checked
// against the tool's schema, and the sources to record. An input without
// handles, or a boundary WithoutHandles, is returned as it is.
func (inv *invocation) resolveInput(ctx context.Context, plan *registry.Plan, input []byte) ([]byte, *resolved, error) {
	b := inv.b
	if b.noHandles {
		return input, nil, nil
	}
	ids, kinds, over := handleRefs(input, MaxHandlesPerInput)
	if over {
		return nil, nil, canonical.Errorf(canonical.CodeInvalidInput, "the arguments hold more than %d handles", MaxHandlesPerInput)
	}
	if len(ids) == 0 {
		return input, nil, nil
	}
	r, err := b.resolveHandles(ctx, inv.run.ID, inv.run.Principal.Subject, inv.env.Tool, ids)
	if err != nil {
		return nil, nil, err
	}
	r.kinds = kinds
	exec, err := plan.CanonicalInput(substitute(input, r))
	if err != nil {
		return nil, nil, err
	}
	return exec, &r, nil
}

// Reveal returns text with each handle of the run replaced by the value it
// stands for, and how many it replaced, for a human who may see the run's
// data: never make it a tool an agent can call. The run must be
// run.Principal's (RUN_FORBIDDEN otherwise, checked in the store's read);
// handles that name nothing of the run stay as they are, as do those past
// the first canonical.MaxHandlesPerCall distinct ones. No flow policy
// applies.
func (b *Boundary) Reveal(ctx context.Context, run RunContext, text []byte) ([]byte, int, error) {
	if b == nil || b.store == nil {
		return nil, 0, canonical.Errorf(canonical.CodeInvalidArgument, "boundary: Reveal on a Boundary not built by New")
	}
	if err := canonical.ValidateRunID(run.ID); err != nil {
		return nil, 0, err
	}
	if err := canonical.ValidatePrincipal(run.Principal.Subject); err != nil {
		return nil, 0, err
	}
	all, _, _ := handleRefs(text, canonical.MaxHandlesPerCall)
	var known resolved
	for len(all) > 0 {
		n := min(len(all), MaxHandlesPerInput)
		part := all[:n]
		all = all[n:]
		// One at a time when a batch fails, so that one unknown handle does
		// not keep the others hidden.
		r, err := b.resolveHandles(ctx, run.ID, run.Principal.Subject, "", part)
		if err == nil {
			known.ids, known.values = append(known.ids, r.ids...), append(known.values, r.values...)
			continue
		}
		if canonical.CodeOf(err) != canonical.CodeHandleUnknown {
			return nil, 0, err
		}
		for _, id := range part {
			if r, err := b.resolveHandles(ctx, run.ID, run.Principal.Subject, "", []string{id}); err == nil {
				known.ids, known.values = append(known.ids, id), append(known.values, r.values[0])
			}
		}
	}
	out, n := reveal(text, known)
	return out, n, nil
}

// reveal replaces each handle of r in text by its value, as it is.
func reveal(text []byte, r resolved) ([]byte, int) {
	return replaceHandles(text, r, func(out, v []byte) []byte { return append(out, v...) })
}
