package progress

import (
	"context"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/canonical"
)

// Default bounds of a projection.
const (
	DefaultMaxSummaryBytes = 512
	DefaultMaxCalls        = 4096
	maxSummaryCeiling      = 64 << 10
	maxCallsCeiling        = canonical.MaxIndexRead
)

// Options bound a projection. A zero field takes its default.
type Options struct {
	// MaxSummaryBytes bounds each fact's summary of the agent result
	// (default DefaultMaxSummaryBytes, at most 64 KiB).
	MaxSummaryBytes int
	// MaxCalls bounds the index entries one projection reads and resolves
	// (default DefaultMaxCalls, at most canonical.MaxIndexRead). A longer
	// index is refused with BUDGET_EXHAUSTED, which names its length, rather
	// than cut: a cut would silently drop facts.
	MaxCalls int
	// Principal is who reads the run (see canonical.ValidatePrincipal). A
	// run of another principal is RUN_FORBIDDEN before any of its keys is
	// read; Observe counts a report under the projection's principal.
	Principal string
}

func (o Options) withDefaults() (Options, error) {
	if o.MaxSummaryBytes == 0 {
		o.MaxSummaryBytes = DefaultMaxSummaryBytes
	}
	if o.MaxCalls == 0 {
		o.MaxCalls = DefaultMaxCalls
	}
	if o.MaxSummaryBytes < 0 || o.MaxSummaryBytes > maxSummaryCeiling {
		return o, canonical.Errorf(canonical.CodeInvalidArgument, "MaxSummaryBytes must be in 1..%d", maxSummaryCeiling)
	}
	if o.MaxCalls < 0 || o.MaxCalls > maxCallsCeiling {
		return o, canonical.Errorf(canonical.CodeInvalidArgument, "MaxCalls must be in 1..%d", maxCallsCeiling)
	}
	return o, nil
}

// Reason says why an indexed identity is not a fact.
type Reason string

// Exclusion reasons.
const (
	// ReasonMissing: the index entry cannot name a record at all (it is not
	// a valid tool_call_id). Stores never write one; only a foreign writer
	// or corruption can.
	ReasonMissing Reason = "MISSING"
	// ReasonExpired: the entry is a valid tool_call_id but its record is
	// gone. Stores cannot tell an expired record from one that was removed
	// (DEL, memory eviction), and neither can Project. Because an id enters
	// the index only in the step that completes an existing record and stores
	// never delete records, a gone record is reported as EXPIRED.
	ReasonExpired Reason = "EXPIRED"
	// ReasonCrossRun: the record read under this run's key carries another
	// run id (or another tool_call_id): it is not owned by this identity.
	ReasonCrossRun Reason = "CROSS_RUN"
	// ReasonProjecting: the record is still PROJECTING (the indexed call
	// expired and its id was begun again).
	ReasonProjecting Reason = "PROJECTING"
	// ReasonError: the record is ERROR, or carries a state no store writes;
	// either way it is not referencable.
	ReasonError Reason = "ERROR"
)

// Fact is one observed fact: a READY record of the run, as much of it as an
// agent may see. Raw and request are never read.
type Fact struct {
	Position   int                `json:"position"`     // index position of the call's first entry
	ToolCallID string             `json:"tool_call_id"` // the framework's id
	Tool       string             `json:"tool"`         // agent-facing tool name
	Evidence   canonical.Evidence `json:"evidence"`     // EVIDENCE_FOUND or NO_EVIDENCE
	Summary    string             `json:"summary"`      // prefix of the agent result, cut at a rune boundary
	Truncated  bool               `json:"truncated"`    // Summary is shorter than the result
}

// Exclusion is an indexed identity that is not a fact, with the reason.
type Exclusion struct {
	Position   int    `json:"position"`     // index position of the entry
	ToolCallID string `json:"tool_call_id"` // the entry, cut to canonical.MaxIDLen bytes when longer
	Reason     Reason `json:"reason"`
}

// Projection is a run's observed facts at one moment: every READY record of
// the run in completion order, and every other indexed identity with the
// reason it was left out. It is derived from the store on demand and never
// stored anywhere.
type Projection struct {
	RunID      string      `json:"run_id"`
	Facts      []Fact      `json:"facts"`
	Excluded   []Exclusion `json:"excluded"`
	Duplicates int         `json:"duplicates"` // index entries that repeated an earlier entry and were skipped
	principal  string      // Options.Principal: the reader, whom Observe reports for
}

// Fact returns the fact of id, if id is one.
func (p *Projection) Fact(id string) (Fact, bool) {
	if p == nil {
		return Fact{}, false
	}
	for _, f := range p.Facts {
		if f.ToolCallID == id {
			return f, true
		}
	}
	return Fact{}, false
}

// Exclusion returns the exclusion of id, if id was excluded.
func (p *Projection) Exclusion(id string) (Exclusion, bool) {
	if p == nil {
		return Exclusion{}, false
	}
	for _, e := range p.Excluded {
		if e.ToolCallID == id {
			return e, true
		}
	}
	return Exclusion{}, false
}

// Project resolves the run's completion index through the store and returns
// its observed facts. It reads at most opts.MaxCalls index entries (and how
// long the index is) with the check that the run is opts.Principal's
// (RUN_FORBIDDEN otherwise) in the same read (canonical.OwnedReader; a
// store that is none is asked CheckPrincipal first), and resolves the
// distinct ones without raw or request, requiring of each record the
// generation of the run's state that the first read found. On Redis that
// is 1 + ceil(distinct ids / redisstore.GetManyBatch) round trips: 2 for up
// to 256 calls, 5 for 1,000; 1 for a run nobody has written or one with an
// empty index.
//
// Only READY records whose run id and tool_call_id are the ones they were
// indexed under become facts. An id that appears more than once in the index
// is resolved and reported once, at its first position.
func Project(ctx context.Context, store canonical.Store, runID string, opts Options) (*Projection, error) {
	if store == nil {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "store is nil")
	}
	if err := canonical.ValidateRunID(runID); err != nil {
		return nil, err
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &Projection{RunID: runID, Facts: []Fact{}, Excluded: []Exclusion{}, principal: opts.Principal}
	idx, err := readIndex(ctx, store, runID, opts.Principal, opts.MaxCalls)
	switch canonical.CodeOf(err) {
	case "":
	case canonical.CodeNotFound:
		return p, nil // a run nobody wrote: no facts, and nothing read
	default:
		return nil, err
	}
	index, length := idx.IDs, idx.Length
	if length > opts.MaxCalls || len(index) > opts.MaxCalls {
		return nil, canonical.Errorf(canonical.CodeBudgetExhausted, "completion index has %d entries, over MaxCalls %d", max(length, len(index)), opts.MaxCalls)
	}
	type entry struct {
		pos int
		id  string
	}
	seen := make(map[string]bool, len(index))
	var lookup []entry // valid distinct ids, in index order
	var invalid []Exclusion
	for pos, id := range index {
		if seen[id] {
			p.Duplicates++
			continue
		}
		seen[id] = true
		if canonical.ValidateToolCallID(id) != nil {
			// GetMany would refuse the whole batch for one bad id.
			invalid = append(invalid, Exclusion{Position: pos, ToolCallID: cutID(id), Reason: ReasonMissing})
			continue
		}
		lookup = append(lookup, entry{pos, id})
	}
	var recs []*canonical.Record
	if len(lookup) > 0 {
		ids := make([]string, len(lookup))
		for i, e := range lookup {
			ids[i] = e.id
		}
		if recs, err = readRecords(ctx, store, runID, opts.Principal, idx.Gen, ids); err != nil {
			return nil, err
		}
		if len(recs) != len(ids) {
			return nil, canonical.Errorf(canonical.CodeStoreUnavailable, "store returned %d records for %d ids", len(recs), len(ids))
		}
	}
	// Merge in index order so that facts and exclusions keep completion order.
	k := 0
	for i, e := range lookup {
		for k < len(invalid) && invalid[k].Position < e.pos {
			p.Excluded = append(p.Excluded, invalid[k])
			k++
		}
		rec := recs[i]
		if reason, ok := Classify(rec, runID, e.id); !ok {
			p.Excluded = append(p.Excluded, Exclusion{Position: e.pos, ToolCallID: e.id, Reason: reason})
			continue
		}
		summary, cut := summarize(rec.Result, opts.MaxSummaryBytes)
		p.Facts = append(p.Facts, Fact{
			Position: e.pos, ToolCallID: e.id, Tool: rec.Tool, Evidence: rec.Evidence,
			Summary: summary, Truncated: cut,
		})
	}
	p.Excluded = append(p.Excluded, invalid[k:]...)
	return p, nil
}

// readIndex reads the run's index on principal's behalf: in one read with
// the owner check when the store is a canonical.OwnedReader, else after
// CheckPrincipal.
func readIndex(ctx context.Context, store canonical.Store, runID, principal string, max int) (canonical.RunIndex, error) {
	if o, ok := store.(canonical.OwnedReader); ok {
		return o.ReadIndex(ctx, runID, principal, max)
	}
	if err := store.CheckPrincipal(ctx, runID, principal); err != nil {
		return canonical.RunIndex{}, err
	}
	ids, n, err := store.Completed(ctx, runID, max)
	return canonical.RunIndex{IDs: ids, Length: n}, err
}

// readRecords reads records on principal's behalf, of the generation gen
// that readIndex found, when the store is a canonical.OwnedReader.
func readRecords(ctx context.Context, store canonical.Store, runID, principal, gen string, ids []string) ([]*canonical.Record, error) {
	if o, ok := store.(canonical.OwnedReader); ok {
		return o.ReadRecords(ctx, runID, principal, gen, ids, canonical.ReadOptions{})
	}
	return store.GetMany(ctx, runID, ids, canonical.ReadOptions{})
}

// Classify says what Project makes of rec, the record read under runID and
// id for an entry of the run's completion index (nil: none was found): a
// fact (ok true), or the reason it is left out. A viewer that reads a page
// of the index can so show each entry as Project would count it without
// reading the rest of the index.
func Classify(rec *canonical.Record, runID, id string) (reason Reason, ok bool) {
	switch {
	case rec == nil:
		return ReasonExpired, false
	case rec.RunID != runID || rec.ToolCallID != id:
		return ReasonCrossRun, false
	case rec.Status == canonical.StatusProjecting:
		return ReasonProjecting, false
	case !rec.Referencable():
		return ReasonError, false
	}
	return "", true
}

// summarize returns the longest prefix of result within max bytes that does
// not split a rune, and whether it is shorter than result.
func summarize(result []byte, max int) (string, bool) {
	if len(result) <= max {
		return string(result), false
	}
	n := 0
	for n < len(result) {
		_, size := utf8.DecodeRune(result[n:])
		if n+size > max {
			break
		}
		n += size
	}
	return string(result[:n]), true
}

// cutID bounds an index entry echoed in an exclusion: a foreign writer may
// have put anything there.
func cutID(id string) string {
	s, _ := summarize([]byte(id), canonical.MaxIDLen)
	return s
}
