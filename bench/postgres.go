package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolcanon/toolcanon/canonical"
)

// DefaultPostgresConns is the connection pool of the postgres row: the
// size that served 64 callers fastest on two cores (a pool as large as the
// callers only adds backends competing for the same cores).
const DefaultPostgresConns = 16

// Postgres is the lifecycle as many teams would build it instead: an
// idempotency table in PostgreSQL (through pgx v5), one row per call with a
// unique (run, call), the run's budget in a run row updated in the same
// transaction, a conditional UPDATE for PROJECTING → READY, and an
// expiry column with the cleanup such a design needs.
//
// Begin is one statement, so one transaction and one round trip: INSERT
// the call ON CONFLICT DO NOTHING (an expired row is taken over), and, only
// when that inserted, upsert the run row counting the call and its request
// bytes; a CHECK on the run row (calls ≤ max, bytes ≤ max) refuses an
// overspent budget by aborting the whole statement. Complete is one
// statement too: UPDATE the call WHERE it is PROJECTING, of this owner and
// not expired, and add the raw and result bytes to the run row. Under READ
// COMMITTED a completer that waited on another's row lock re-reads the row
// and finds it READY, so exactly one wins; the expiry is set at Begin and
// never written again. Reads treat an expired row as absent; Cleanup
// deletes expired rows in batches. Payloads are bytea, stored as given.
//
// Every Impl keeps its tables in a schema of its own (its Config's prefix),
// dropped by Close.
type Postgres struct {
	roundTrips
	pool   *pgxpool.Pool
	cfg    Config
	schema string
}

// The statements of the postgres row. $-arguments are named in each.
const (
	pgSchema = `
CREATE TABLE runs (
	run_id     text PRIMARY KEY,
	calls      bigint NOT NULL,
	max_calls  bigint NOT NULL,
	bytes      bigint NOT NULL,
	max_bytes  bigint NOT NULL,
	expires_at timestamptz NOT NULL,
	CONSTRAINT run_budget CHECK (calls <= max_calls AND bytes <= max_bytes)
);
CREATE INDEX runs_expiry ON runs (expires_at);
CREATE TABLE calls (
	run_id       text NOT NULL,
	tool_call_id text NOT NULL,
	tool         text NOT NULL,
	owner        text NOT NULL,
	status       text NOT NULL CHECK (status IN ('PROJECTING', 'READY', 'ERROR')),
	evidence     text NOT NULL,
	request      bytea NOT NULL,
	raw          bytea,
	result       bytea,
	created_at   timestamptz NOT NULL,
	updated_at   timestamptz NOT NULL,
	lease_until  timestamptz NOT NULL,
	expires_at   timestamptz NOT NULL,
	PRIMARY KEY (run_id, tool_call_id)
);
CREATE INDEX calls_expiry ON calls (expires_at);`

	// $1 run, $2 call, $3 tool, $4 owner, $5 request, $6 TTL ms, $7 max
	// calls, $8 max bytes. Returns the calls the run has counted, no row
	// when the call exists.
	pgBegin = `
WITH c AS (
	INSERT INTO calls AS c (run_id, tool_call_id, tool, owner, status, evidence, request, created_at, updated_at, lease_until, expires_at)
	VALUES ($1, $2, $3, $4, 'PROJECTING', 'UNKNOWN', $5, now(), now(),
		now() + $6 * interval '1 millisecond', now() + $6 * interval '1 millisecond')
	ON CONFLICT (run_id, tool_call_id) DO UPDATE SET tool = excluded.tool, owner = excluded.owner, status = excluded.status,
		evidence = excluded.evidence, request = excluded.request, raw = NULL, result = NULL, created_at = excluded.created_at,
		updated_at = excluded.updated_at, lease_until = excluded.lease_until, expires_at = excluded.expires_at
		WHERE c.expires_at <= now()
	RETURNING c.expires_at
)
INSERT INTO runs AS r (run_id, calls, max_calls, bytes, max_bytes, expires_at)
SELECT $1, 1, $7, octet_length($5), $8, c.expires_at FROM c
ON CONFLICT (run_id) DO UPDATE SET
	calls = CASE WHEN r.expires_at <= now() THEN 1 ELSE r.calls + 1 END,
	bytes = CASE WHEN r.expires_at <= now() THEN excluded.bytes ELSE r.bytes + excluded.bytes END,
	max_calls = CASE WHEN r.expires_at <= now() THEN excluded.max_calls ELSE r.max_calls END,
	max_bytes = CASE WHEN r.expires_at <= now() THEN excluded.max_bytes ELSE r.max_bytes END,
	expires_at = greatest(r.expires_at, excluded.expires_at)
RETURNING r.calls`

	// $1 run, $2 call, $3 owner, $4 status, $5 evidence, $6 raw, $7 result.
	// Returns one row when the call was completed, none when it was not
	// PROJECTING, not this owner's, or expired.
	pgComplete = `
WITH c AS (
	UPDATE calls SET status = $4, evidence = $5, raw = $6, result = $7, updated_at = now()
	WHERE run_id = $1 AND tool_call_id = $2 AND owner = $3 AND status = 'PROJECTING' AND expires_at > now()
	RETURNING run_id
)
UPDATE runs SET bytes = runs.bytes + octet_length($6) + octet_length($7) FROM c WHERE runs.run_id = c.run_id
RETURNING runs.bytes`

	pgRaw    = `SELECT raw FROM calls WHERE run_id = $1 AND tool_call_id = $2 AND expires_at > now()`
	pgExpiry = `SELECT (extract(epoch FROM expires_at) * 1000)::bigint FROM calls
		WHERE run_id = $1 AND tool_call_id = $2 AND expires_at > now()`

	// $1 batch size. SKIP LOCKED: cleaners never wait on each other or on
	// a Begin taking an expired row over.
	pgCleanCalls = `DELETE FROM calls WHERE (run_id, tool_call_id) IN
		(SELECT run_id, tool_call_id FROM calls WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED)`
	pgCleanRuns = `DELETE FROM runs WHERE run_id IN
		(SELECT run_id FROM runs WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED)`
)

// checkViolation is the SQLSTATE of a CHECK violation; on run_budget it
// is a refused Begin or Complete.
const checkViolation = "23514"

// NewPostgres connects the postgres row to the database at dsn with a pool
// of conns connections (DefaultPostgresConns when 0) and creates its
// tables in a new schema named after cfg.Prefix.
func NewPostgres(ctx context.Context, dsn string, cfg Config, conns int) (*Postgres, error) {
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if conns <= 0 {
		conns = DefaultPostgresConns
	}
	p := &Postgres{cfg: cfg, schema: schemaName(cfg.Prefix)}
	pc.MaxConns = int32(conns)
	pc.ConnConfig.RuntimeParams["search_path"] = p.schema
	pc.ConnConfig.Tracer = countTracer{&p.roundTrips}
	if p.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return nil, err
	}
	if _, err := p.pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{p.schema}.Sanitize()+";"+pgSchema); err != nil {
		p.pool.Close()
		return nil, fmt.Errorf("create the postgres row's tables: %w", err)
	}
	return p, nil
}

// schemaName makes a schema name of a key prefix: lower case, every other
// byte than a letter or digit an underscore.
func schemaName(prefix string) string {
	return "bench_" + strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '_'
	}, prefix)
}

// Name implements Impl.
func (p *Postgres) Name() string { return NamePostgres }

// Begin implements Impl: a call that exists (and has not expired) and a
// run whose budget it would overspend are refused.
func (p *Postgres) Begin(ctx context.Context, c Call, request []byte) (bool, error) {
	lim := p.cfg.Limits.WithDefaults()
	var n int64
	err := p.pool.QueryRow(ctx, pgBegin, c.RunID, c.ToolCallID, Tool, c.Owner, request,
		p.cfg.TTL.Milliseconds(), lim.MaxCallsPerRun, lim.MaxRunBytes).Scan(&n)
	return refusal(err)
}

// Complete implements Impl.
func (p *Postgres) Complete(ctx context.Context, c Call, raw, result []byte) (bool, error) {
	var n int64
	err := p.pool.QueryRow(ctx, pgComplete, c.RunID, c.ToolCallID, c.Owner,
		string(canonical.StatusReady), string(canonical.EvidenceFound), raw, result).Scan(&n)
	return refusal(err)
}

// refusal reads a statement's outcome: a row is a yes, no row or the run
// budget's CHECK is a no, anything else an error.
func refusal(err error) (bool, error) {
	var pe *pgconn.PgError
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, pgx.ErrNoRows), errors.As(err, &pe) && pe.Code == checkViolation && pe.ConstraintName == "run_budget":
		return false, nil
	}
	return false, err
}

// Raw implements Impl.
func (p *Postgres) Raw(ctx context.Context, c Call) ([]byte, error) {
	var raw []byte
	err := p.pool.QueryRow(ctx, pgRaw, c.RunID, c.ToolCallID).Scan(&raw)
	return raw, err
}

// Expiry implements Impl: the row's expiry column, an instant of the
// server's clock, so the interval is one millisecond wide at most.
func (p *Postgres) Expiry(ctx context.Context, c Call) (Expiry, error) {
	var ms int64
	if err := p.pool.QueryRow(ctx, pgExpiry, c.RunID, c.ToolCallID).Scan(&ms); err != nil {
		return Expiry{}, err
	}
	return Expiry{Lo: ms, Hi: ms}, nil
}

// Cleanup deletes the expired calls, then the expired runs, batch rows per
// statement, and returns how many of each it deleted. A deployment runs it
// periodically; rows it has not reached yet are already absent to every
// read and are taken over by a Begin of the same id.
func (p *Postgres) Cleanup(ctx context.Context, batch int) (calls, runs int64, err error) {
	for _, q := range []struct {
		sql string
		n   *int64
	}{{pgCleanCalls, &calls}, {pgCleanRuns, &runs}} {
		for {
			tag, err := p.pool.Exec(ctx, q.sql, batch)
			if err != nil {
				return calls, runs, err
			}
			*q.n += tag.RowsAffected()
			if tag.RowsAffected() < int64(batch) {
				break
			}
		}
	}
	return calls, runs, nil
}

// Reset empties the tables, between the comparison's passes.
func (p *Postgres) Reset(ctx context.Context) error {
	_, err := p.pool.Exec(ctx, "TRUNCATE calls, runs")
	return err
}

// Close drops the schema and closes the pool.
func (p *Postgres) Close() error {
	defer p.pool.Close()
	_, err := p.pool.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{p.schema}.Sanitize()+" CASCADE")
	return err
}

// countTracer counts one round trip per statement sent (Query, QueryRow,
// Exec). pgx prepares each statement once per connection and keeps it;
// those round trips are not counted.
type countTracer struct{ r *roundTrips }

func (t countTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	t.r.n.Add(1)
	return ctx
}

func (countTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// ServerVersion returns the server's version (server_version).
func (p *Postgres) ServerVersion(ctx context.Context) (string, error) {
	var v string
	err := p.pool.QueryRow(ctx, "SHOW server_version").Scan(&v)
	return v, err
}
