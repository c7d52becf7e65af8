package querylog

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/drain"
	"github.com/toolcanon/toolcanon/projectors/internal/view"
	"github.com/toolcanon/toolcanon/projectors/redact"
)

// Paths locate the fields of a log response, in gjson path syntax. Entry
// fields are relative to one element of Entries.
type Paths struct {
	Success   string // boolean; must be true
	Entries   string // array of entries
	From, To  string // RFC 3339 window bounds; optional
	Timestamp string // RFC 3339; required per entry
	Level     string // optional per entry
	Message   string // required per entry
}

// LegacyPaths returns the paths of the legacy Mock response.
func LegacyPaths() Paths {
	return Paths{
		Success: "success", Entries: "entries", From: "window.from", To: "window.to",
		Timestamp: "timestamp", Level: "level", Message: "message",
	}
}

// Config configures a Projector.
type Config struct {
	Limits projectors.Limits
	Paths  Paths
	// SourceKind is reported as source_kind: where the logs came from.
	SourceKind string
	// MaxPatterns and MaxTimeline bound the two collections; 0 means
	// Limits.Items.
	MaxPatterns, MaxTimeline int
	// Miner configures template mining; MaxClusters and MaxTokens default
	// to 512 and 64.
	Miner drain.Config
	// MaxMineBytes bounds the redacted text of one message that is mined.
	// Default 2048.
	MaxMineBytes int
	// MaxMessageBytes bounds the decoded text of one message that is
	// redacted, mined and shown; the rest of a longer message is dropped
	// before any of that (the result says truncated), so that the cost of a
	// message is bounded whatever its length. The cut falls at the last
	// separator before the bound, so that no part of a token cut in two is
	// kept: half a secret is still a secret. Default 8192; at least
	// Limits.Text.
	MaxMessageBytes int
	// Now ends the scope window when the response carries none; nil means
	// time.Now.
	Now func() time.Time
	// Detectors, when set, find further secrets in each message before
	// the redactor's own rules run (see redact.New). Each must be safe for
	// concurrent use.
	Detectors []redact.Detector
}

// DefaultMaxMessageBytes is the default of Config.MaxMessageBytes.
const DefaultMaxMessageBytes = 8 << 10

// checkEvery is how much work passes between two looks at the context.
const checkEvery = 64 << 10

// DefaultConfig returns the configuration for the legacy Mock response.
func DefaultConfig() Config {
	return Config{
		Limits:     projectors.DefaultLimits(),
		Paths:      LegacyPaths(),
		SourceKind: "MOCK",
		Miner:      drain.DefaultConfig(),
	}
}

// Projector projects log-query responses. It is safe for concurrent use.
type Projector struct {
	cfg    Config
	simple bool // entry paths are plain keys: one pass per entry
	// oneWalk: the entries path is a plain key too, so the entries are read
	// during the walk that finds the other paths.
	oneWalk bool
	pool    sync.Pool
}

var _ projectors.Projector = (*Projector)(nil)

// New validates cfg and returns a Projector.
func New(cfg Config) (*Projector, error) {
	if err := cfg.Limits.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxPatterns <= 0 {
		cfg.MaxPatterns = cfg.Limits.Items
	}
	if cfg.MaxTimeline <= 0 {
		cfg.MaxTimeline = cfg.Limits.Items
	}
	if cfg.Miner.MaxClusters <= 0 {
		cfg.Miner.MaxClusters = 512
	}
	if cfg.Miner.MaxTokens <= 0 {
		cfg.Miner.MaxTokens = 64
	}
	if cfg.MaxMineBytes <= 0 {
		cfg.MaxMineBytes = 2048
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.MaxMessageBytes < cfg.Limits.Text || cfg.MaxMessageBytes > 1<<20 {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "querylog: message bound %d outside [text budget %d, 1 MiB]",
			cfg.MaxMessageBytes, cfg.Limits.Text)
	}
	if cfg.SourceKind == "" || len(cfg.SourceKind) > 32 || !topicOK(cfg.SourceKind) {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "querylog: source kind must be 1..32 bytes of [A-Za-z0-9._/-]")
	}
	if cfg.Paths.Entries == "" || cfg.Paths.Timestamp == "" || cfg.Paths.Message == "" {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "querylog: entries, timestamp and message paths are required")
	}
	// The scope (topic and query at their bounds, escaped) must fit.
	if cfg.Limits.Total < 6*(MaxTopicBytes+MaxQueryBytes)+512 {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "querylog: total budget %d cannot hold the scope", cfg.Limits.Total)
	}
	p := &Projector{cfg: cfg}
	p.simple = projectors.SimpleKey(cfg.Paths.Timestamp) && projectors.SimpleKey(cfg.Paths.Message) &&
		(cfg.Paths.Level == "" || projectors.SimpleKey(cfg.Paths.Level))
	p.oneWalk = p.simple && projectors.SimpleKey(cfg.Paths.Entries)
	p.pool.New = func() any { return p.newState() }
	return p, nil
}

// Levels, most severe first; the index orders patterns of equal count.
var levels = [...]string{"FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "UNKNOWN"}

const unknownLevel = len(levels) - 1

func levelIndex(raw string) int {
	switch raw { // the usual spellings, before folding case
	case "ERROR":
		return 1
	case "WARN":
		return 2
	case "INFO":
		return 3
	case "DEBUG":
		return 4
	}
	var buf [10]byte
	if len(raw) > len(buf) {
		return unknownLevel
	}
	b := buf[:len(raw)]
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c >= 'a' && c <= 'z' {
			c -= 32
		}
		b[i] = c
	}
	switch string(b) {
	case "FATAL", "CRITICAL", "CRIT", "EMERG", "ALERT", "PANIC":
		return 0
	case "ERROR", "ERR", "SEVERE":
		return 1
	case "WARN", "WARNING":
		return 2
	case "INFO", "NOTICE", "INFORMATION":
		return 3
	case "DEBUG", "FINE":
		return 4
	case "TRACE", "FINER", "FINEST":
		return 5
	}
	return unknownLevel
}

type stat struct {
	count       int
	first, last int64 // unix nanoseconds
}

type event struct {
	ts         int64
	level      int
	start, end int // message bytes in state.arena
}

type patternRef struct {
	level, id int
	stat
}

// state is the per-call scratch, pooled so that a call allocates little
// beyond its result.
type state struct {
	w        projectors.Writer
	red      *redact.Redactor
	miners   [len(levels)]*drain.Miner
	stats    [len(levels)][]stat
	events   []event
	arena    []byte
	msg, rmg []byte
	refs     []patternRef
	tmpl     []byte
}

// rememberBytes bounds the messages, with their masked ranges, that one
// call's redactor keeps so that a message the log repeats word for word is
// read once (redact.Redactor.Remember): many services repeat most of their
// messages.
const rememberBytes = 256 << 10

func (p *Projector) newState() any {
	st := &state{red: redact.New(p.cfg.Detectors...)}
	st.red.Remember(rememberBytes)
	for i := range st.miners {
		st.miners[i] = drain.New(p.cfg.Miner)
	}
	return st
}

// put gives st back to the pool, with no message of the call remembered.
func (p *Projector) put(st *state) {
	st.red.Forget()
	p.pool.Put(st)
}

func (st *state) reset() {
	for i := range st.miners {
		st.miners[i].Reset()
		st.stats[i] = st.stats[i][:0]
	}
	st.events = st.events[:0]
	st.arena = st.arena[:0]
	st.refs = st.refs[:0]
}

const tsLayout = "2006-01-02T15:04:05.000Z07:00"

func failed(format string, args ...any) error {
	return canonical.Errorf(canonical.CodeProjectionFailed, "querylog: "+format, args...)
}

// Project implements projectors.Projector.
func (p *Projector) Project(ctx context.Context, call projectors.Call, raw []byte) (projectors.Projection, error) {
	if err := ctx.Err(); err != nil {
		return projectors.Projection{}, canonical.Wrap(canonical.CodeProjectionFailed, err, "querylog: cancelled")
	}
	req, err := ParseRequest(call.Input)
	if err != nil {
		return projectors.Projection{}, err
	}
	pa := &p.cfg.Paths
	st := p.pool.Get().(*state)
	defer p.put(st)
	st.reset()
	mask := canonical.MaskerOf(call.Mask)

	matches, mineCut, work := 0, false, 0
	var perr error
	var f fields
	var isObj bool
	handle := func() bool {
		matches++
		// The context is checked by work done, not by entries: a few huge
		// entries must not run long unobserved either.
		if work += len(f.msg) + len(f.ts) + len(f.level) + 64; work >= checkEvery {
			work = 0
			if perr = ctx.Err(); perr != nil {
				perr = canonical.Wrap(canonical.CodeProjectionFailed, perr, "querylog: cancelled")
				return false
			}
		}
		if !isObj {
			perr = failed("entry %d is not an object", matches)
			return false
		}
		tsRaw, msgRaw := f.ts, f.msg
		if !f.hasTS {
			perr = failed("entry %d has no timestamp", matches)
			return false
		}
		ts, err := parseTimestamp(tsRaw)
		if err != nil {
			perr = failed("entry %d has a malformed timestamp", matches)
			return false
		}
		if !f.hasMsg {
			perr = failed("entry %d has no message", matches)
			return false
		}
		lvl := unknownLevel
		if f.hasLevel {
			lvl = levelIndex(f.level)
		}
		var cut bool
		st.msg, cut = projectors.AppendDecodedCut(st.msg[:0], msgRaw, p.cfg.MaxMessageBytes)
		mineCut = mineCut || cut
		st.rmg = st.red.AppendMasked(st.rmg[:0], st.msg, mask)
		mined := st.rmg
		if len(mined) > p.cfg.MaxMineBytes {
			mined = mined[:runeCut(mined, p.cfg.MaxMineBytes)]
			mineCut = true
		}
		if id, ok := st.miners[lvl].Add(mined); ok {
			s := &st.stats[lvl]
			if id == len(*s) {
				*s = append(*s, stat{})
			}
			n := ts
			x := &(*s)[id]
			if x.count == 0 || n < x.first {
				x.first = n
			}
			if x.count == 0 || n > x.last {
				x.last = n
			}
			x.count++
		} else {
			mineCut = true
		}
		if len(st.events) < p.cfg.MaxTimeline {
			start := len(st.arena)
			keep := st.rmg
			if len(keep) > p.cfg.Limits.Text {
				// One byte over the budget lets the writer see, and
				// report, the cut.
				keep = keep[:runeCut(keep, p.cfg.Limits.Text+1)]
			}
			st.arena = append(st.arena, keep...)
			st.events = append(st.events, event{ts: ts, level: lvl, start: start, end: len(st.arena)})
		}
		return true
	}
	member := func(k, v []byte) {
		p.member(&f, k, v)
	}
	endEntry := func(obj bool) bool {
		isObj = obj
		ok := handle()
		f = fields{}
		return ok
	}
	// success, entries, from, to: found in the pass that checks the
	// response, which with plain keys also reads the entries as it passes
	// them, so that the response is read once. What the entries hold
	// counts only once the response has passed the checks of the other
	// members, as when they are read after.
	var at [4]int
	paths := []string{pa.Success, pa.Entries, pa.From, pa.To}
	valid := false
	if p.oneWalk {
		valid = projectors.WalkValid(raw, paths, at[:], pa.Entries, member, endEntry)
	} else if valid = projectors.Valid(raw); valid {
		projectors.LocateMany(raw, paths, at[:])
	}
	if !valid {
		return projectors.Projection{}, failed("response is not valid JSON")
	}
	if raw[skipWS(raw)] != '{' {
		return projectors.Projection{}, failed("response is not an object")
	}
	if pa.Success != "" && (at[0] < 0 || !bytes.HasPrefix(raw[at[0]:], []byte("true"))) {
		return projectors.Projection{}, failed("source reported failure")
	}
	entries := at[1]
	if entries < 0 || raw[entries] != '[' {
		return projectors.Projection{}, failed("response has no entries array")
	}
	from, to, err := p.window(raw, at[2], at[3], req)
	if err != nil {
		return projectors.Projection{}, err
	}
	switch {
	case p.oneWalk:
		// Read during the check, or stopped by an entry with perr set.
	case p.simple:
		projectors.EachObjectMember(raw, entries, member, endEntry)
	default:
		projectors.EachElement(raw, entries, func(elem []byte) bool {
			f, isObj = p.entryFields(elem)
			return handle()
		})
	}
	if perr != nil {
		return projectors.Projection{}, perr
	}
	return p.write(st, call, req, from, to, matches, mineCut)
}

// runeCut returns the largest n <= max such that b[:n] ends at a rune
// boundary.
func runeCut(b []byte, max int) int {
	if max >= len(b) {
		return len(b)
	}
	n := max
	for n > 0 && n > max-utf8.UTFMax && !utf8.RuneStart(b[n]) {
		n--
	}
	return n
}

// window returns the scope's bounds: the response's own window when it has
// one, else the lookback ending now.
func (p *Projector) window(raw []byte, fi, ti int, req Request) (time.Time, time.Time, error) {
	pa := &p.cfg.Paths
	if pa.From != "" && pa.To != "" {
		if fi >= 0 || ti >= 0 {
			fs, ok1 := projectors.StringAt(raw, fi)
			ts, ok2 := projectors.StringAt(raw, ti)
			from, err1 := time.Parse(time.RFC3339Nano, view.String(fs))
			to, err2 := time.Parse(time.RFC3339Nano, view.String(ts))
			if !ok1 || !ok2 || err1 != nil || err2 != nil || to.Before(from) {
				return time.Time{}, time.Time{}, failed("response has a malformed window")
			}
			return from, to, nil
		}
	}
	now := time.Now
	if p.cfg.Now != nil {
		now = p.cfg.Now
	}
	to := now()
	return to.Add(-time.Duration(req.LookbackMinutes) * time.Minute), to, nil
}

// fields are an entry's string fields, undecoded.
type fields struct {
	ts, level, msg          string
	hasTS, hasLevel, hasMsg bool
}

// entryFields reads an entry's fields: in one pass over its members when
// the paths are plain keys, through gjson otherwise. It reports false when
// the entry is not an object.
func (p *Projector) entryFields(elem []byte) (fields, bool) {
	var f fields
	pa := &p.cfg.Paths
	if p.simple {
		ok := projectors.EachMember(elem, func(k, v []byte) bool {
			p.member(&f, k, v)
			return true
		})
		return f, ok
	}
	e := gjson.Parse(view.String(elem))
	if !e.IsObject() {
		return f, false
	}
	f.ts, f.hasTS = projectors.StringContents(e.Get(pa.Timestamp))
	f.msg, f.hasMsg = projectors.StringContents(e.Get(pa.Message))
	if pa.Level != "" {
		f.level, f.hasLevel = projectors.StringContents(e.Get(pa.Level))
	}
	return f, true
}

// member records one entry member in f when its key is one of the paths.
// A field that is not a string counts as missing.
func (p *Projector) member(f *fields, k, v []byte) {
	if len(v) == 0 || v[0] != '"' {
		return
	}
	pa := &p.cfg.Paths
	s := view.String(v[1 : len(v)-1])
	// A key without escapes names a path when it is equal to it: each
	// key of an entry is read for escapes once, not once per path.
	plain := bytes.IndexByte(k, '\\') < 0
	is := func(path string) bool {
		if plain {
			return string(k) == path
		}
		return projectors.KeyEquals(k, path)
	}
	switch {
	case is(pa.Timestamp):
		f.ts, f.hasTS = s, true
	case is(pa.Message):
		f.msg, f.hasMsg = s, true
	case pa.Level != "" && is(pa.Level):
		f.level, f.hasLevel = s, true
	}
}

func skipWS(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	if i == len(b) {
		return 0
	}
	return i
}

func appendTS(dst []byte, ns int64) []byte {
	return time.Unix(0, ns).UTC().AppendFormat(dst, tsLayout)
}

// tsLen is the length of a timestamp written with tsLayout, quotes
// excluded, for years 1000–9999.
const tsLen = len("2006-01-02T15:04:05.000Z")

func (p *Projector) write(st *state, call projectors.Call, req Request, from, to time.Time, matches int, mineCut bool) (projectors.Projection, error) {
	lim := p.cfg.Limits
	out := make([]byte, 0, min(lim.Total, 1024+len(st.arena)+64*len(st.events)))
	w := &st.w
	w.Reset(out, lim.Total)
	if mineCut {
		w.SetTruncated()
	}
	var tsBuf [40]byte
	tailTimeline := len(`,"timeline":[]`)
	tailEnd := len(`,"returned":`) + len(strconv.Itoa(p.cfg.MaxTimeline)) + len(`,"truncated":false`)
	ok := w.BeginObject() &&
		w.Key("source_kind") && w.String(p.cfg.SourceKind) &&
		w.Key("tool_call_id") && w.String(call.ToolCallID) &&
		w.Key("scope") && w.BeginObject() &&
		w.Key("topic") && w.String(req.Topic) &&
		w.Key("query") && w.String(req.Query) &&
		w.Key("lookback_minutes") && w.Int(int64(req.LookbackMinutes)) &&
		w.Key("from") && w.StringBytes(from.UTC().AppendFormat(tsBuf[:0], tsLayout)) &&
		w.Key("to") && w.StringBytes(to.UTC().AppendFormat(tsBuf[:0], tsLayout))
	if ok {
		w.EndObject()
		ok = w.Key("match_count") && w.Int(int64(matches)) &&
			w.Reserve(tailTimeline+tailEnd) && w.Key("patterns")
	}
	if !ok {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeResultTooLarge, "querylog: scope exceeds the result budget")
	}

	// Patterns: most frequent first; ties by first appearance, severity,
	// then text, so the order is deterministic.
	for lvl := range st.stats {
		for id, s := range st.stats[lvl] {
			st.refs = append(st.refs, patternRef{level: lvl, id: id, stat: s})
		}
	}
	slices.SortFunc(st.refs, func(a, b patternRef) int {
		if c := cmp.Compare(b.count, a.count); c != 0 {
			return c
		}
		if c := cmp.Compare(a.first, b.first); c != 0 {
			return c
		}
		if c := cmp.Compare(a.level, b.level); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	w.PushLimit(lim.Collection)
	if !w.BeginArray() {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeResultTooLarge, "querylog: no room for patterns")
	}
	patterns := 0
	for i, r := range st.refs {
		if i == p.cfg.MaxPatterns {
			w.SetTruncated()
			break
		}
		if !p.writePattern(w, st, r) {
			w.SetTruncated()
			break
		}
		patterns++
	}
	w.EndArray()
	w.PopLimit()

	w.Release(tailTimeline)
	w.PushLimit(lim.Collection)
	if !w.Key("timeline") || !w.BeginArray() {
		return projectors.Projection{}, canonical.Errorf(canonical.CodeResultTooLarge, "querylog: no room for the timeline")
	}
	returned := 0
	for _, e := range st.events {
		if !p.writeEvent(w, st, e) {
			w.SetTruncated()
			break
		}
		returned++
	}
	if matches > len(st.events) {
		w.SetTruncated()
	}
	w.EndArray()
	w.PopLimit()
	w.Release(tailEnd)
	w.Key("returned")
	w.Int(int64(returned))
	w.Key("truncated")
	w.Bool(w.Truncated())
	w.EndObject()

	if matches > 0 && returned == 0 && patterns == 0 {
		// Logs matched but none fits: saying NO_EVIDENCE would be false.
		return projectors.Projection{}, canonical.Errorf(canonical.CodeResultTooLarge, "querylog: no pattern or event fits the budget")
	}
	ev := canonical.NoEvidence
	if matches > 0 {
		ev = canonical.EvidenceFound
	}
	return projectors.Projection{Evidence: ev, Result: w.Bytes()}, nil
}

func (p *Projector) writePattern(w *projectors.Writer, st *state, r patternRef) bool {
	st.tmpl = st.miners[r.level].AppendTemplate(st.tmpl[:0], r.id)
	lvl := levels[r.level]
	// Everything after the pattern text, so the text can take the rest.
	rest := len(`,"count":`) + len(strconv.Itoa(r.count)) + len(`,"level":""`) + len(lvl) +
		len(`,"first_seen":""`) + tsLen + len(`,"last_seen":""`) + tsLen
	var tsBuf [40]byte
	m, ok := w.BeginItem(p.cfg.Limits.Item)
	ok = ok && w.Key("pattern") && w.Reserve(rest)
	if ok {
		_, ok = w.Text(st.tmpl, p.cfg.Limits.Text)
		w.Release(rest)
	}
	ok = ok && w.Key("count") && w.Int(int64(r.count)) &&
		w.Key("level") && w.String(lvl) &&
		w.Key("first_seen") && w.StringBytes(appendTS(tsBuf[:0], r.first)) &&
		w.Key("last_seen") && w.StringBytes(appendTS(tsBuf[:0], r.last))
	return w.EndItem(m, ok)
}

func (p *Projector) writeEvent(w *projectors.Writer, st *state, e event) bool {
	var tsBuf [40]byte
	m, ok := w.BeginItem(p.cfg.Limits.Item)
	ok = ok &&
		w.Key("ts") && w.StringBytes(appendTS(tsBuf[:0], e.ts)) &&
		w.Key("level") && w.String(levels[e.level]) &&
		w.Key("message")
	if ok {
		_, ok = w.Text(st.arena[e.start:e.end], p.cfg.Limits.Text)
	}
	return w.EndItem(m, ok)
}
