package mcpresult

import (
	"bytes"
	"context"
	"sync"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/internal/view"
	"github.com/toolcanon/toolcanon/projectors/redact"
)

// Defaults and ceilings of Config.
const (
	DefaultMaxDepth   = 8
	DefaultMaxMembers = 64
	maxDepthCeiling   = 32
	maxMembersCeiling = 1024
)

// Config configures a Projector.
type Config struct {
	// Limits bound the result (see the package documentation).
	Limits projectors.Limits
	// MaxDepth bounds the nesting of projected JSON; a deeper value is
	// written as null and marks the result truncated. Default
	// DefaultMaxDepth.
	MaxDepth int
	// MaxMembers bounds the members of one object; default
	// DefaultMaxMembers.
	MaxMembers int
	// Media says which images, audio and resources pass to the agent; the
	// zero value lets links and text resources pass and names every image
	// and audio clip as withheld. Their data has its own budget besides
	// Limits.Total.
	Media Media
}

// DefaultConfig returns projectors.DefaultLimits with the default depth and
// member bounds.
func DefaultConfig() Config {
	return Config{Limits: projectors.DefaultLimits(), MaxDepth: DefaultMaxDepth, MaxMembers: DefaultMaxMembers}
}

// Projector projects MCP tool results. It is safe for concurrent use.
type Projector struct {
	cfg  Config
	pool sync.Pool
}

var _ projectors.Projector = (*Projector)(nil)

// New validates cfg and returns a Projector.
func New(cfg Config) (*Projector, error) {
	if err := cfg.Limits.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Media.validate(); err != nil {
		return nil, err
	}
	if cfg.MaxDepth == 0 {
		cfg.MaxDepth = DefaultMaxDepth
	}
	if cfg.MaxMembers == 0 {
		cfg.MaxMembers = DefaultMaxMembers
	}
	if cfg.MaxDepth < 1 || cfg.MaxDepth > maxDepthCeiling {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "mcpresult: depth bound %d outside [1, %d]", cfg.MaxDepth, maxDepthCeiling)
	}
	if cfg.MaxMembers < 1 || cfg.MaxMembers > maxMembersCeiling {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "mcpresult: member bound %d outside [1, %d]", cfg.MaxMembers, maxMembersCeiling)
	}
	p := &Projector{cfg: cfg}
	p.pool.New = func() any { return &state{red: redact.New()} }
	return p, nil
}

// state is the per-call scratch, pooled so that a call allocates little
// beyond its result.
type state struct {
	w    projectors.Writer
	red  *redact.Redactor
	mask canonical.Masker // the call's
	dec  []byte           // a decoded string
	out  []byte           // its redacted form
	keys [][]byte
	text []byte // joined text content
}

// tail is what follows the content: ,"truncated":false
const tail = len(`,"truncated":false`)

// Project implements projectors.Projector.
func (p *Projector) Project(ctx context.Context, call projectors.Call, raw []byte) (projectors.Projection, error) {
	if err := ctx.Err(); err != nil {
		return projectors.Projection{}, canonical.Wrap(canonical.CodeProjectionFailed, err, "mcpresult: cancelled")
	}
	pl, err := read(raw)
	if err != nil {
		return projectors.Projection{}, err
	}
	st := p.pool.Get().(*state)
	defer p.pool.Put(st)
	st.mask = canonical.MaskerOf(call.Mask)

	lim := p.cfg.Limits
	w := &st.w
	room := p.cfg.Media.room(len(pl.blocks))
	w.Reset(make([]byte, 0, min(lim.Total+room, 256+len(raw))), lim.Total+room)
	ok := w.BeginObject() && w.Key("tool_call_id") && w.String(call.ToolCallID) && w.Reserve(tail+room) && w.Key("content")
	if !ok {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeResultTooLarge, "mcpresult: the tool_call_id exceeds the result budget")
	}
	ev := canonical.EvidenceFound
	switch {
	case pl.empty():
		ev = canonical.NoEvidence
		ok = w.Null()
	case pl.json != nil:
		ok = p.value(w, st, pl.json, 0)
	default:
		var cut bool
		st.text, cut = pl.appendText(st.text[:0], rawWindow(lim.Total))
		ok = p.redacted(w, st, st.text, lim.Total, cut)
	}
	if !ok {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeResultTooLarge, "mcpresult: no content fits the result budget")
	}
	w.Release(room)
	media, reserved, attached, withheld := p.blocks(w, st, pl.blocks)
	if withheld {
		w.SetTruncated()
	}
	if attached > 0 {
		ev = canonical.EvidenceFound
	}
	w.Release(tail)
	w.Key("truncated")
	w.Bool(w.Truncated())
	if len(media) > 0 {
		w.Release(reserved)
		w.Key("media")
		w.BeginArray()
		for _, d := range media {
			w.String(d)
		}
		w.EndArray()
	}
	w.EndObject()
	return projectors.Projection{Evidence: ev, Result: w.Bytes()}, nil
}

// payload is what a CallToolResult carries for projection.
type payload struct {
	json    []byte   // structuredContent, or the one text block holding a JSON object or array (decoded)
	texts   []string // undecoded contents of the text blocks
	blocks  [][]byte // content blocks that are not text
	omitted int      // how many
}

// empty reports whether the payload holds nothing: no JSON or an empty
// one, and no text but blanks.
func (pl *payload) empty() bool {
	if pl.json != nil {
		return emptyJSON(pl.json)
	}
	for _, t := range pl.texts {
		if !projectors.IsBlankRaw(t) {
			return false
		}
	}
	return true
}

// appendText appends the decoded text blocks, joined by a newline, up to
// about limit bytes of their raw form, and reports whether it left any out.
func (pl *payload) appendText(dst []byte, limit int) ([]byte, bool) {
	for i, t := range pl.texts {
		if i > 0 {
			dst = append(dst, '\n')
		}
		raw, cut := rawPrefix(view.Bytes(t), limit-len(dst))
		dst = projectors.AppendDecoded(dst, view.String(raw))
		if cut || (i < len(pl.texts)-1 && len(dst) >= limit) {
			return dst, true
		}
	}
	return dst, false
}

// rawPrefix returns the longest prefix of the undecoded string contents raw
// of at most n bytes that does not end inside an escape, and whether it cut
// anything.
func rawPrefix(raw []byte, n int) ([]byte, bool) {
	if len(raw) <= n {
		return raw, false
	}
	end := 0
	for i := 0; i < n; {
		step := 1
		if raw[i] == '\\' {
			step = 2
			if i+1 < len(raw) && raw[i+1] == 'u' {
				step = 6
			}
		}
		if i+step > n {
			break
		}
		i += step
		end = i
	}
	return raw[:end], true
}

// read checks raw and finds its payload, without decoding anything but the
// one text block that may hold JSON.
func read(raw []byte) (payload, error) {
	var pl payload
	if !projectors.Valid(raw) {
		return pl, canonical.Errorf(canonical.CodeProjectionFailed, "mcpresult: the result is not valid JSON")
	}
	root := gjson.Parse(view.String(raw))
	if !root.IsObject() {
		return pl, canonical.Errorf(canonical.CodeProjectionFailed, "mcpresult: the result is not an object")
	}
	if e := root.Get("isError"); e.Exists() && e.Type != gjson.False {
		return pl, canonical.Errorf(canonical.CodeExecutionFailed, "mcpresult: the tool reported an error")
	}
	if sc := root.Get("structuredContent"); sc.Exists() && sc.Type != gjson.Null {
		pl.json = view.Bytes(sc.Raw)
		return pl, nil
	}
	content := projectors.Locate(raw, "content")
	if content < 0 {
		return pl, canonical.Errorf(canonical.CodeProjectionFailed, "mcpresult: the result has no content")
	}
	bad := false
	if !projectors.EachElement(raw, content, func(elem []byte) bool {
		// Members are read raw: a text of megabytes is not decoded here.
		var typ, text []byte
		if !projectors.EachMember(elem, func(k, v []byte) bool {
			switch {
			case projectors.KeyEquals(k, "type"):
				typ = v
			case projectors.KeyEquals(k, "text"):
				text = v
			}
			return true
		}) {
			bad = true
			return false
		}
		if string(typ) != `"text"` {
			pl.omitted++
			pl.blocks = append(pl.blocks, elem)
			return true
		}
		if len(text) < 2 || text[0] != '"' {
			bad = true
			return false
		}
		pl.texts = append(pl.texts, view.String(text[1:len(text)-1]))
		return true
	}) || bad {
		return pl, canonical.Errorf(canonical.CodeProjectionFailed, "mcpresult: the content is not an array of content blocks")
	}
	if len(pl.texts) == 1 && pl.omitted == 0 {
		t := bytes.TrimLeft(view.Bytes(pl.texts[0]), " \t\r\n")
		if len(t) > 0 && (t[0] == '{' || t[0] == '[') {
			if doc := projectors.AppendDecoded(nil, pl.texts[0]); projectors.Valid(doc) {
				pl.json = doc
			}
		}
	}
	return pl, nil
}

// emptyJSON reports whether the valid JSON v is null, {}, [] or a blank
// string.
func emptyJSON(v []byte) bool {
	v = bytes.TrimSpace(v)
	switch {
	case len(v) == 0, string(v) == "null":
		return true
	case v[0] == '{' || v[0] == '[':
		return len(bytes.TrimSpace(v[1:len(v)-1])) == 0
	case v[0] == '"':
		return projectors.IsBlankRaw(view.String(v[1 : len(v)-1]))
	}
	return false
}

// value writes the valid JSON value v, degraded to fit: strings cut,
// elements and members dropped, depth capped. It returns false, having
// written nothing, when not even a cut form of v fits.
func (p *Projector) value(w *projectors.Writer, st *state, v []byte, depth int) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return w.Null()
	}
	switch v[0] {
	case '{', '[':
		if depth >= p.cfg.MaxDepth {
			w.SetTruncated()
			return w.Null()
		}
		if v[0] == '{' {
			return p.object(w, st, v, depth)
		}
		return p.array(w, st, v, depth)
	case '"':
		return p.text(w, st, v[1:len(v)-1], p.cfg.Limits.Text)
	case 't':
		return w.Bool(true)
	case 'f':
		return w.Bool(false)
	case 'n':
		return w.Null()
	}
	return w.Number(v)
}

// text writes the undecoded string contents raw, decoded, redacted and cut
// to max bytes.
func (p *Projector) text(w *projectors.Writer, st *state, raw []byte, limit int) bool {
	raw, cut := rawPrefix(raw, rawWindow(limit))
	st.dec = projectors.AppendDecoded(st.dec[:0], view.String(raw))
	return p.redacted(w, st, st.dec, limit, cut)
}

// redacted writes the redacted form of s cut to limit bytes; partial says
// that s is itself a cut prefix. Only a window of s is redacted, so that a
// string of megabytes costs what its shown part costs; the window ends at a
// line break (or a space) so that no secret is cut in two before the
// redactor sees it, and what lies beyond it is never shown.
func (p *Projector) redacted(w *projectors.Writer, st *state, s []byte, limit int, partial bool) bool {
	n := max(windowFactor*limit, minWindow)
	cut := partial || len(s) > n
	if cut {
		s = atBreak(s[:min(len(s), n)])
	}
	st.out = st.red.AppendMasked(st.out[:0], s, st.mask)
	_, ok := w.Text(st.out, limit)
	if cut {
		w.SetTruncated()
	}
	return ok
}

// The redaction window of a string shown in at most n bytes: windowFactor*n
// bytes, and at least minWindow, since redaction can shrink a text. The
// undecoded prefix read for it is a little longer, so that a window that
// ends at a break is usually full.
const (
	windowFactor = 4
	minWindow    = 4 << 10
)

func rawWindow(limit int) int { return max(windowFactor*limit, minWindow) + minWindow }

// atBreak returns the prefix of the cut text s that ends at its last line
// break, else its last space or tab, in its second half, else at a rune
// boundary.
func atBreak(s []byte) []byte {
	n := len(s)
	if i := bytes.LastIndexByte(s, '\n'); i >= n/2 {
		return s[:i]
	}
	if i := bytes.LastIndexAny(s, " \t"); i >= n/2 {
		return s[:i]
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i-1]) {
		i--
	}
	if i > 0 && !utf8.FullRune(s[i-1:n]) {
		n = i - 1 // the last rune was cut
	}
	return s[:n]
}

func (p *Projector) object(w *projectors.Writer, st *state, v []byte, depth int) bool {
	if !w.BeginObject() {
		return false
	}
	first := len(st.keys)
	defer func() { st.keys = st.keys[:first] }()
	n := 0
	projectors.EachMember(v, func(k, val []byte) bool {
		if n == p.cfg.MaxMembers {
			w.SetTruncated()
			return false
		}
		st.dec = projectors.AppendDecoded(st.dec[:0], view.String(k))
		kind := redact.FieldKind(st.dec)
		key := st.red.AppendMasked(nil, st.dec, st.mask)
		for _, seen := range st.keys[first:] {
			if bytes.Equal(seen, key) {
				// A repeated name, or two names that redact alike: the first wins.
				w.SetTruncated()
				return true
			}
		}
		m := w.Mark()
		ok := w.KeyText(key)
		if ok {
			switch {
			case kind == canonical.KindSecret, kind != "" && scalar(val):
				// The whole value, whatever it holds, as one masked value:
				// a string decoded, so that it masks as it does in text.
				v := bytes.TrimSpace(val)
				if v[0] == '"' {
					st.dec = projectors.AppendDecoded(st.dec[:0], view.String(v[1:len(v)-1]))
					v = st.dec
				}
				st.out = st.mask.AppendMask(st.out[:0], kind, v)
				_, ok = w.Text(st.out, p.cfg.Limits.Text)
			default:
				ok = p.value(w, st, val, depth+1)
			}
		}
		if !ok {
			w.Rollback(m)
			w.SetTruncated()
			return false
		}
		st.keys = append(st.keys, key)
		n++
		return true
	})
	w.EndObject()
	return true
}

func (p *Projector) array(w *projectors.Writer, st *state, v []byte, depth int) bool {
	lim := p.cfg.Limits
	w.PushLimit(lim.Collection)
	if !w.BeginArray() {
		w.PopLimit()
		return false
	}
	n := 0
	projectors.EachElement(v, 0, func(elem []byte) bool {
		if n == lim.Items {
			w.SetTruncated()
			return false
		}
		m := w.Mark()
		w.PushLimit(lim.Item)
		if !p.value(w, st, elem, depth+1) {
			w.Rollback(m)
			w.SetTruncated()
			return false
		}
		w.PopLimit()
		n++
		return true
	})
	w.EndArray()
	w.PopLimit()
	return true
}

// scalar reports whether the valid JSON value v is a string or a number.
func scalar(v []byte) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && (v[0] == '"' || v[0] == '-' || v[0] >= '0' && v[0] <= '9')
}
