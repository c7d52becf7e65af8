// Package audit exports a store's audit stream — one canonical.AuditEvent
// per transition, written in the transition — to sinks that keep it beyond
// the records' TTL, and verifies what they keep.
//
// The Exporter drains a canonical.AuditSource (memstore or redisstore with
// audit on) at least once: it chains each run's events with SHA-256
// (Event.ChainHash), writes them with a signed Checkpoint to a Sink, and
// only then has the store delete them. A sink stores each event once, so
// the export is exactly once at the sink. JSONL is the embedded sink
// (CloudEvents JSON lines, rotated, fsynced); module audit/pgsink is
// PostgreSQL's. VerifyJSONL and Verifier check an export offline: every
// stream's chain and sequence, every replay against the completion it
// replays, the checkpoints' chain and signatures, and a cut tail.
package audit
