// Package pgsink is the audit stream's PostgreSQL sink: one row per event,
// unique on (run, gen, seq), so that a batch delivered again inserts
// nothing; and one row per signed checkpoint. It is a module of its own,
// so that only the hosts that use it depend on pgx.
//
// The schema (Schema, created by Open when it is missing):
//
//	CREATE TABLE toolcanon_audit_events (
//	  run text, gen text, seq bigint,            -- the event's name for good
//	  time timestamptz,                          -- the transition, by the store's clock (ms)
//	  type text, call text, tool text, tool_version text, principal text,
//	  status text, evidence text, code text, execution text, key_id text,
//	  request_hmac text, request_size bigint, raw_hmac text, raw_size bigint,
//	  result_hmac text, result_size bigint, redactions bigint, handles bigint,
//	  trace_id text, span_id text,
//	  token_hmac text, wait_until_ms bigint,     -- await_input
//	  input_hmac text, input_size bigint,        -- continue
//	  prev text, hash text,                      -- the chain: see audit.Event.ChainHash
//	  origin text,                               -- the exporter's origin
//	  PRIMARY KEY (run, gen, seq));
//	CREATE INDEX ON toolcanon_audit_events (time);
//	CREATE TABLE toolcanon_audit_checkpoints (
//	  n bigint PRIMARY KEY, origin text, time timestamptz, note text);  -- the signed note
//
// every column NOT NULL ("" and 0 where an event has no such field). Open
// adds the columns of await_input and continue events to a table an
// earlier release made without them.
// Keeping six months is a DELETE of the rows older than that (see the
// README); verification then takes audit.VerifyOptions.Partial.
package pgsink

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolcanon/toolcanon/audit"
	"github.com/toolcanon/toolcanon/canonical"
)

// DefaultTable is the prefix of the tables' names (Options.Table).
const DefaultTable = "toolcanon_audit"

// Options configure a Sink.
type Options struct {
	// Table prefixes the two tables' names: <Table>_events and
	// <Table>_checkpoints (DefaultTable). Letters, digits and '_'.
	Table string
}

// Sink writes events to PostgreSQL. It is safe for concurrent use.
type Sink struct {
	pool         *pgxpool.Pool
	events, cps  string
	insertEvents string
	insertCP     string
	selectLastCP string
}

var _ audit.Sink = (*Sink)(nil)

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,40}$`)

// Schema returns the statements that create the tables of prefix table.
func Schema(table string) string {
	e, c := table+"_events", table+"_checkpoints"
	return `CREATE TABLE IF NOT EXISTS ` + e + ` (
  run text NOT NULL, gen text NOT NULL, seq bigint NOT NULL, time timestamptz NOT NULL,
  type text NOT NULL, call text NOT NULL, tool text NOT NULL, tool_version text NOT NULL, principal text NOT NULL,
  status text NOT NULL, evidence text NOT NULL, code text NOT NULL, execution text NOT NULL, key_id text NOT NULL,
  request_hmac text NOT NULL, request_size bigint NOT NULL, raw_hmac text NOT NULL, raw_size bigint NOT NULL,
  result_hmac text NOT NULL, result_size bigint NOT NULL, redactions bigint NOT NULL, handles bigint NOT NULL,
  trace_id text NOT NULL, span_id text NOT NULL, prev text NOT NULL, hash text NOT NULL, origin text NOT NULL,
  PRIMARY KEY (run, gen, seq));
ALTER TABLE ` + e + ` ADD COLUMN IF NOT EXISTS token_hmac text NOT NULL DEFAULT '',
  ADD COLUMN IF NOT EXISTS wait_until_ms bigint NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS input_hmac text NOT NULL DEFAULT '',
  ADD COLUMN IF NOT EXISTS input_size bigint NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS ` + e + `_time ON ` + e + ` (time);
CREATE TABLE IF NOT EXISTS ` + c + ` (
  n bigint PRIMARY KEY, origin text NOT NULL, time timestamptz NOT NULL, note text NOT NULL);`
}

// columns are the events table's columns, in the order Write binds them.
const columns = "run, gen, seq, time, type, call, tool, tool_version, principal, status, evidence, code, execution, key_id, " +
	"request_hmac, request_size, raw_hmac, raw_size, result_hmac, result_size, redactions, handles, trace_id, span_id, prev, hash, origin, " +
	"token_hmac, wait_until_ms, input_hmac, input_size"

// Open connects to the database of dsn and creates the tables when they
// are missing.
func Open(ctx context.Context, dsn string, opts Options) (*Sink, error) {
	if opts.Table == "" {
		opts.Table = DefaultTable
	}
	if !tableName.MatchString(opts.Table) {
		return nil, fmt.Errorf("pgsink: table prefix %q: letters, digits and '_'", opts.Table)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("pgsink: %w", err)
	}
	if _, err := pool.Exec(ctx, Schema(opts.Table)); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgsink: create the tables: %w", err)
	}
	s := &Sink{pool: pool, events: opts.Table + "_events", cps: opts.Table + "_checkpoints"}
	// One statement inserts a batch: an array per column, unnested.
	types := []string{"text", "text", "bigint", "timestamptz", "text", "text", "text", "text", "text", "text", "text", "text",
		"text", "text", "text", "bigint", "text", "bigint", "text", "bigint", "bigint", "bigint", "text", "text", "text", "text", "text",
		"text", "bigint", "text", "bigint"}
	args := make([]string, len(types))
	for i, t := range types {
		args[i] = fmt.Sprintf("$%d::%s[]", i+1, t)
	}
	s.insertEvents = "INSERT INTO " + s.events + " (" + columns + ") SELECT * FROM unnest(" + strings.Join(args, ", ") +
		") ON CONFLICT (run, gen, seq) DO NOTHING"
	s.insertCP = "INSERT INTO " + s.cps + " (n, origin, time, note) VALUES ($1, $2, $3, $4)"
	s.selectLastCP = "SELECT note FROM " + s.cps + " ORDER BY n DESC LIMIT 1"
	return s, nil
}

// Close closes the connections.
func (s *Sink) Close() error {
	s.pool.Close()
	return nil
}

// Write implements audit.Sink: the events and the checkpoint in one
// transaction, committed before it returns. An event held already is
// skipped (ON CONFLICT DO NOTHING); a checkpoint whose number is taken (two
// exporters at once) fails the batch, which is then delivered again.
func (s *Sink) Write(ctx context.Context, events []audit.Event, cp audit.Checkpoint) error {
	cols := make([][]any, 31)
	for i := range cols {
		cols[i] = make([]any, 0, len(events))
	}
	for i := range events {
		e := &events[i]
		vals := []any{e.RunID, e.Gen, e.Seq, e.Time, string(e.Type), e.ToolCallID, e.Tool, e.ToolVersion, e.Principal,
			string(e.Status), string(e.Evidence), string(e.Code), e.Execution, e.KeyID, e.RequestDigest, e.RequestSize,
			e.RawDigest, e.RawSize, e.ResultDigest, e.ResultSize, int64(e.Redactions), int64(e.Handles), e.TraceID, e.SpanID,
			e.Prev, e.Hash, cp.Origin, e.TokenDigest, unixMilli(e.WaitUntil), e.InputDigest, e.InputSize}
		for j, v := range vals {
			cols[j] = append(cols[j], v)
		}
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if len(events) > 0 {
			args := make([]any, len(cols))
			for i, c := range cols {
				args[i] = typed(c)
			}
			if _, err := tx.Exec(ctx, s.insertEvents, args...); err != nil {
				return fmt.Errorf("pgsink: insert events: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, s.insertCP, cp.N, cp.Origin, cp.Time, string(cp.Note)); err != nil {
			return fmt.Errorf("pgsink: insert checkpoint %d: %w", cp.N, err)
		}
		return nil
	})
}

// typed returns a column's values as a slice of their type, which pgx
// sends as an array.
func typed(c []any) any {
	if len(c) == 0 {
		return []string{}
	}
	switch c[0].(type) {
	case string:
		out := make([]string, len(c))
		for i, v := range c {
			out[i] = v.(string)
		}
		return out
	case int64:
		out := make([]int64, len(c))
		for i, v := range c {
			out[i] = v.(int64)
		}
		return out
	case time.Time:
		out := make([]time.Time, len(c))
		for i, v := range c {
			out[i] = v.(time.Time)
		}
		return out
	}
	panic(fmt.Sprintf("pgsink: a column of %T", c[0]))
}

// LastCheckpoint implements audit.Sink.
func (s *Sink) LastCheckpoint(ctx context.Context) (audit.Checkpoint, bool, error) {
	var note string
	err := s.pool.QueryRow(ctx, s.selectLastCP).Scan(&note)
	if errors.Is(err, pgx.ErrNoRows) {
		return audit.Checkpoint{}, false, nil
	}
	if err != nil {
		return audit.Checkpoint{}, false, fmt.Errorf("pgsink: read the last checkpoint: %w", err)
	}
	cp, err := audit.ParseCheckpoint([]byte(note))
	if err != nil {
		return audit.Checkpoint{}, false, fmt.Errorf("pgsink: the last checkpoint: %w", err)
	}
	return cp, true, nil
}

// Verify checks the tables as audit.Verifier does an export: every event,
// stream by stream in sequence order, then every checkpoint in order.
func (s *Sink) Verify(ctx context.Context, opts audit.VerifyOptions) (audit.VerifyReport, error) {
	v := audit.NewVerifier(opts)
	rows, err := s.pool.Query(ctx, "SELECT "+columns+" FROM "+s.events+" ORDER BY run, gen, seq")
	if err != nil {
		return audit.VerifyReport{}, fmt.Errorf("pgsink: %w", err)
	}
	for rows.Next() {
		var e audit.Event
		var typ, status, evidence, code, origin string
		var red, handles, wait int64
		var t time.Time
		if err := rows.Scan(&e.RunID, &e.Gen, &e.Seq, &t, &typ, &e.ToolCallID, &e.Tool, &e.ToolVersion, &e.Principal,
			&status, &evidence, &code, &e.Execution, &e.KeyID, &e.RequestDigest, &e.RequestSize, &e.RawDigest, &e.RawSize,
			&e.ResultDigest, &e.ResultSize, &red, &handles, &e.TraceID, &e.SpanID, &e.Prev, &e.Hash, &origin,
			&e.TokenDigest, &wait, &e.InputDigest, &e.InputSize); err != nil {
			rows.Close()
			return audit.VerifyReport{}, fmt.Errorf("pgsink: %w", err)
		}
		e.Time, e.Type = t.UTC(), canonical.AuditType(typ)
		e.Status, e.Evidence, e.Code = canonical.Status(status), canonical.Evidence(evidence), canonical.Code(code)
		e.Redactions, e.Handles = int(red), int(handles)
		if wait != 0 {
			e.WaitUntil = time.UnixMilli(wait).UTC()
		}
		v.Event(fmt.Sprintf("%s row %s", s.events, e.ID()), e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return audit.VerifyReport{}, fmt.Errorf("pgsink: %w", err)
	}
	rows, err = s.pool.Query(ctx, "SELECT n, note FROM "+s.cps+" ORDER BY n")
	if err != nil {
		return audit.VerifyReport{}, fmt.Errorf("pgsink: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var n int64
		var note string
		if err := rows.Scan(&n, &note); err != nil {
			return audit.VerifyReport{}, fmt.Errorf("pgsink: %w", err)
		}
		at := fmt.Sprintf("%s row %d", s.cps, n)
		cp, err := audit.ParseCheckpoint([]byte(note))
		if err != nil || cp.N != n {
			v.Fail(at, "checkpoint row %d does not hold checkpoint %d: %v", n, n, err)
			continue
		}
		v.Checkpoint(at, cp)
	}
	if err := rows.Err(); err != nil {
		return audit.VerifyReport{}, fmt.Errorf("pgsink: %w", err)
	}
	return v.Finish(), nil
}

// unixMilli is t in ms since the epoch, 0 for the zero time.
func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
