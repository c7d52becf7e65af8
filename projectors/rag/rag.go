package rag

import (
	"bytes"
	"context"
	"strconv"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/internal/view"
	"github.com/toolcanon/toolcanon/projectors/redact"
)

// Paths locate the fields of a RAG response, in gjson path syntax. Block
// fields are relative to one element of Blocks.
type Paths struct {
	// Success is the path of a boolean that is false when the backend
	// failed; "" disables the check. A missing field counts as success.
	Success string
	// Blocks is the path of the array of retrieved blocks.
	Blocks     string
	Source     string // the block's source (index, corpus, system); optional, see DefaultSource
	DocumentID string // the document's id within its source; required
	Title      string // optional
	// Excerpt lists the fields that hold an excerpt, in order of preference;
	// the first one that holds a non-blank string is the block's text, and a
	// block with none is not evidence. Name only fields the backend fills
	// with excerpts: a field listed here reaches the agent (cut to the text
	// budget), so a document body must never be one of them.
	Excerpt []string
}

// LegacyPaths returns the paths of the legacy response (see the package
// documentation). Its only excerpt path is "excerpt": the legacy "content"
// holds the full document body, which never reaches the agent.
func LegacyPaths() Paths {
	return Paths{
		Success:    "success",
		Blocks:     "blocks",
		Source:     "source",
		DocumentID: "document_id",
		Title:      "title",
		Excerpt:    []string{"excerpt"},
	}
}

// Config configures a Projector.
type Config struct {
	Limits projectors.Limits
	Paths  Paths
	// DefaultSource names the source of blocks that carry none; "" makes
	// such blocks unusable.
	DefaultSource string
	// MaxQueryBytes bounds the request's query. Default 1024.
	MaxQueryBytes int
}

// DefaultConfig returns the configuration for the legacy response with
// projectors.DefaultLimits.
func DefaultConfig() Config {
	return Config{Limits: projectors.DefaultLimits(), Paths: LegacyPaths(), MaxQueryBytes: 1024}
}

// Projector projects RAG responses. It is safe for concurrent use.
type Projector struct {
	cfg  Config
	tail int // bytes after the evidence array: ,"returned":N,"truncated":false
	pool sync.Pool
	// simple: every block path is a plain key, so a block is read in one
	// pass over its members.
	simple bool
}

var _ projectors.Projector = (*Projector)(nil)

// New validates cfg and returns a Projector.
func New(cfg Config) (*Projector, error) {
	if err := cfg.Limits.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxQueryBytes == 0 {
		cfg.MaxQueryBytes = 1024
	}
	p := cfg.Paths
	if p.Blocks == "" || p.DocumentID == "" || len(p.Excerpt) == 0 {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "rag: blocks, document id and excerpt paths are required")
	}
	if cfg.MaxQueryBytes < 1 || cfg.MaxQueryBytes*6+64 > cfg.Limits.Total/2 {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "rag: query bound %d does not fit the total budget", cfg.MaxQueryBytes)
	}
	pr := &Projector{cfg: cfg}
	pr.tail = len(`,"returned":`) + len(strconv.Itoa(cfg.Limits.Items)) + len(`,"truncated":false`)
	pr.pool.New = func() any { return &state{} }
	pr.simple = projectors.SimpleKey(p.DocumentID) && (p.Source == "" || projectors.SimpleKey(p.Source)) &&
		(p.Title == "" || projectors.SimpleKey(p.Title)) && len(p.Excerpt) <= maxSimpleExcerpts
	for _, e := range p.Excerpt {
		pr.simple = pr.simple && projectors.SimpleKey(e)
	}
	return pr, nil
}

// state is the per-call scratch, pooled so that a call allocates little
// beyond its result.
type state struct {
	w    projectors.Writer
	keys []byte // decoded source "\x00" document id of returned items
	ends []int  // end offset of each key in keys
	// index holds the keys too once there are more than a scan should
	// compare, so that a repeated document costs one lookup however many
	// items the budget allows.
	index map[string]struct{}
	query []byte
	tmp   []byte
	red   *redact.Redactor
	mask  canonical.Masker // the call's
	dec   []byte           // a decoded title or excerpt
	out   []byte           // its redacted form
}

// checkEvery is how many bytes of blocks pass between two looks at the
// context.
const checkEvery = 64 << 10

// Project implements projectors.Projector.
func (p *Projector) Project(ctx context.Context, call projectors.Call, raw []byte) (projectors.Projection, error) {
	if err := ctx.Err(); err != nil {
		return projectors.Projection{}, canonical.Wrap(canonical.CodeProjectionFailed, err, "rag: cancelled")
	}
	st := p.pool.Get().(*state)
	defer p.pool.Put(st)
	st.mask = canonical.MaskerOf(call.Mask)

	query, err := p.parseInput(st, call.Input)
	if err != nil {
		return projectors.Projection{}, err
	}
	// One pass checks the response and finds the blocks, and the success
	// flag when its path is made of plain keys; gjson reads any other
	// success path, since it also answers paths it computes (modifiers),
	// which are not offsets in the response.
	pa := &p.cfg.Paths
	success := ""
	if projectors.SimplePath(pa.Success) {
		success = pa.Success
	}
	var at [2]int
	if !projectors.WalkValid(raw, []string{success, pa.Blocks}, at[:], "", nil, nil) {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeProjectionFailed, "rag: response is not valid JSON")
	}
	if t := bytes.TrimLeft(raw, " \t\n\r"); t[0] != '{' {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeProjectionFailed, "rag: response is not an object")
	}
	failed := success != "" && at[0] >= 0 && !bytes.HasPrefix(raw[at[0]:], []byte("true"))
	if success == "" && pa.Success != "" {
		s := gjson.Get(view.String(raw), pa.Success)
		failed = s.Exists() && s.Type != gjson.True
	}
	if failed {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeProjectionFailed, "rag: backend reported failure")
	}
	blocks := at[1]
	if blocks < 0 || raw[blocks] != '[' {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeProjectionFailed, "rag: response has no %s array", pa.Blocks)
	}

	lim := p.cfg.Limits
	out := make([]byte, 0, min(lim.Total, 512+len(raw)))
	w := &st.w
	w.Reset(out, lim.Total)
	st.keys, st.ends = st.keys[:0], st.ends[:0]
	clear(st.index)

	ok := w.BeginObject() &&
		w.Key("query") && w.StringBytes(query) &&
		w.Key("tool_call_id") && w.String(call.ToolCallID) &&
		w.Reserve(p.tail) &&
		w.Key("evidence")
	if !ok {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeResultTooLarge, "rag: query and id exceed the result budget")
	}
	w.PushLimit(lim.Collection)
	if !w.BeginArray() {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeResultTooLarge, "rag: no room for evidence")
	}
	returned, usable, work := 0, 0, 0
	var ctxErr error
	projectors.EachElement(raw, blocks, func(elem []byte) bool {
		// The context is checked by bytes read, not by blocks: a few huge
		// blocks must not run long unobserved either.
		if work += len(elem) + 64; work >= checkEvery {
			work = 0
			if ctxErr = ctx.Err(); ctxErr != nil {
				return false
			}
		}
		var src, id, title, text string
		var good bool
		if p.simple {
			src, id, title, text, good = p.memberFields(elem)
		} else {
			src, id, title, text, good = p.fields(gjson.Parse(view.String(elem)))
		}
		if !good {
			return true
		}
		st.tmp = projectors.AppendDecoded(st.tmp[:0], src)
		st.tmp = append(st.tmp, 0)
		st.tmp = projectors.AppendDecoded(st.tmp, id)
		if st.seen(st.tmp) {
			return true // the first block of a document wins
		}
		usable++
		if returned == lim.Items {
			w.SetTruncated()
			return false
		}
		if !p.writeItem(w, st, title, text) {
			w.SetTruncated()
			return false
		}
		st.add(st.tmp)
		returned++
		return true
	})
	if ctxErr != nil {
		return projectors.Projection{}, canonical.Wrap(canonical.CodeProjectionFailed, ctxErr, "rag: cancelled")
	}
	if usable > 0 && returned == 0 {
		// Evidence exists but none fits: saying NO_EVIDENCE would be false.
		return projectors.Projection{}, canonical.Errorf(canonical.CodeResultTooLarge, "rag: no evidence item fits the budget")
	}
	w.EndArray()
	w.PopLimit()
	w.Release(p.tail)
	w.Key("returned")
	w.Int(int64(returned))
	w.Key("truncated")
	w.Bool(w.Truncated())
	w.EndObject()

	ev := canonical.NoEvidence
	if returned > 0 {
		ev = canonical.EvidenceFound
	}
	return projectors.Projection{Evidence: ev, Result: w.Bytes()}, nil
}

// fields extracts a block's fields as undecoded string contents and
// reports whether the block is usable: an object with a document id, a
// source and a non-blank excerpt.
func (p *Projector) fields(b gjson.Result) (src, id, title, text string, ok bool) {
	if !b.IsObject() {
		return "", "", "", "", false
	}
	get := func(path string) (string, bool) { return projectors.StringContents(b.Get(path)) }
	return p.choose(get)
}

// maxSimpleExcerpts bounds the excerpt paths of the one-pass reading.
const maxSimpleExcerpts = 8

// memberFields is fields for plain-key paths: one pass over the block's
// members, however large they are, instead of one per path.
func (p *Projector) memberFields(elem []byte) (src, id, title, text string, ok bool) {
	pa := &p.cfg.Paths
	var found [3]string // document id, source, title
	var has [3]bool
	var exVal [maxSimpleExcerpts]string
	var exHas [maxSimpleExcerpts]bool
	isObj := projectors.EachMember(elem, func(k, v []byte) bool {
		if len(v) == 0 || v[0] != '"' {
			return true
		}
		val := view.String(v[1 : len(v)-1])
		switch {
		case projectors.KeyEquals(k, pa.DocumentID):
			found[0], has[0] = val, true
		case pa.Source != "" && projectors.KeyEquals(k, pa.Source):
			found[1], has[1] = val, true
		case pa.Title != "" && projectors.KeyEquals(k, pa.Title):
			found[2], has[2] = val, true
		}
		for n, path := range pa.Excerpt {
			if projectors.KeyEquals(k, path) {
				exVal[n], exHas[n] = val, true
			}
		}
		return true
	})
	if !isObj {
		return "", "", "", "", false
	}
	get := func(path string) (string, bool) {
		switch path {
		case pa.DocumentID:
			return found[0], has[0]
		case pa.Source:
			return found[1], has[1]
		case pa.Title:
			return found[2], has[2]
		}
		for n, e := range pa.Excerpt {
			if e == path {
				return exVal[n], exHas[n]
			}
		}
		return "", false
	}
	return p.choose(get)
}

// choose applies the block rules to the fields get reads (undecoded string
// contents, and whether the field is a string).
func (p *Projector) choose(get func(path string) (string, bool)) (src, id, title, text string, ok bool) {
	pa := &p.cfg.Paths
	id, ok = get(pa.DocumentID)
	if !ok || projectors.IsBlankRaw(id) {
		return "", "", "", "", false
	}
	if pa.Source != "" {
		src, ok = get(pa.Source)
	}
	if !ok || src == "" {
		if p.cfg.DefaultSource == "" {
			return "", "", "", "", false
		}
		src = p.cfg.DefaultSource
	}
	if pa.Title != "" {
		title, _ = get(pa.Title)
	}
	for _, path := range pa.Excerpt {
		if t, isStr := get(path); isStr && !projectors.IsBlankRaw(t) {
			return src, id, title, t, true
		}
	}
	return "", "", "", "", false
}

// scanKeys is the number of returned items up to which seen compares keys
// one by one.
const scanKeys = 32

func (st *state) seen(key []byte) bool {
	if len(st.ends) > scanKeys {
		_, ok := st.index[string(key)]
		return ok
	}
	start := 0
	for _, end := range st.ends {
		if bytes.Equal(st.keys[start:end], key) {
			return true
		}
		start = end
	}
	return false
}

func (st *state) add(key []byte) {
	st.keys = append(st.keys, key...)
	st.ends = append(st.ends, len(st.keys))
	if len(st.ends) <= scanKeys {
		return
	}
	if st.index == nil {
		st.index = map[string]struct{}{}
	}
	if len(st.index) == 0 {
		start := 0
		for _, end := range st.ends {
			st.index[string(st.keys[start:end])] = struct{}{}
			start = end
		}
		return
	}
	st.index[string(key)] = struct{}{}
}

// writeItem writes one evidence object, or nothing when it does not fit.
func (p *Projector) writeItem(w *projectors.Writer, st *state, title, text string) bool {
	sep := bytes.IndexByte(st.tmp, 0) // st.tmp holds source NUL document id, decoded
	m, ok := w.BeginItem(p.cfg.Limits.Item)
	ok = ok &&
		w.Key("source") && w.StringBytes(st.tmp[:sep]) &&
		w.Key("document_id") && w.StringBytes(st.tmp[sep+1:]) &&
		w.Key("title")
	if ok {
		// A title is descriptive: a prefix is fine.
		ok = st.redacted(w, title, min(p.cfg.Limits.Text, 256))
	}
	ok = ok && w.Key("excerpt")
	if ok {
		before := w.Len()
		ok = st.redacted(w, text, p.cfg.Limits.Text)
		// An empty excerpt proves nothing.
		ok = ok && w.Len() > before+2
	}
	return w.EndItem(m, ok)
}

// redacted writes the undecoded string contents raw, decoded, redacted
// and cut to limit bytes. Only a window of it is decoded and redacted, so
// that a text of megabytes costs what its shown part costs; the window
// ends at a separator, so that no value is cut in two before the redactor
// sees it.
func (st *state) redacted(w *projectors.Writer, raw string, limit int) bool {
	var cut bool
	st.dec, cut = projectors.AppendDecodedCut(st.dec[:0], raw, TextWindow(limit))
	if st.red == nil {
		st.red = redact.New()
	}
	if cut && len(st.dec) == 0 {
		// One unbroken run longer than the window: no words, one value.
		st.out = st.mask.AppendMask(st.out[:0], canonical.KindID, view.Bytes(raw[:min(len(raw), TextWindow(limit))]))
	} else {
		st.out = st.red.AppendMasked(st.out[:0], st.dec, st.mask)
	}
	_, ok := w.Text(st.out, limit)
	if cut {
		w.SetTruncated()
	}
	return ok
}

// TextWindow is how many decoded bytes of a title or an excerpt shown in
// at most limit bytes are redacted: four times as many, and at least 4 KiB,
// since redaction can shrink a text.
func TextWindow(limit int) int { return max(4*limit, 4<<10) }

func (p *Projector) parseInput(st *state, in []byte) ([]byte, error) {
	if !projectors.Valid(in) {
		return nil, canonical.Errorf(canonical.CodeInvalidInput, "rag: input is not valid JSON")
	}
	root := gjson.Parse(view.String(in))
	if !root.IsObject() {
		return nil, canonical.Errorf(canonical.CodeInvalidInput, "rag: input is not an object")
	}
	var q gjson.Result
	bad := ""
	root.ForEach(func(k, v gjson.Result) bool {
		if k.String() != "query" || q.Exists() {
			bad = "rag: input has an unknown or repeated field"
			return false
		}
		q = v
		return true
	})
	if bad != "" {
		return nil, canonical.Errorf(canonical.CodeInvalidInput, "%s", bad)
	}
	raw, ok := projectors.StringContents(q)
	if !ok {
		return nil, canonical.Errorf(canonical.CodeInvalidInput, "rag: query must be a string")
	}
	st.query = projectors.AppendDecoded(st.query[:0], raw)
	if len(bytes.TrimSpace(st.query)) == 0 || len(st.query) > p.cfg.MaxQueryBytes || !projectors.ValidText(view.String(st.query)) {
		return nil, canonical.Errorf(canonical.CodeInvalidInput, "rag: query must be 1..%d bytes of text", p.cfg.MaxQueryBytes)
	}
	return st.query, nil
}
