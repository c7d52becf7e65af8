// Package progress turns a run's completion index into observed facts, checks
// the agent's progress reports against them, and decides how the run's final
// answer is released.
//
// # Observed facts
//
// Project reads the run's completion index (the ordered tool_call_ids of its
// completed calls, kept by the store), at most Options.MaxCalls entries of
// it, and resolves every id through the store in one GetMany, without raw
// responses or requests; an index longer than MaxCalls is refused with
// BUDGET_EXHAUSTED, never cut. Only READY records of
// the run become facts, in completion order; a fact carries the id, the
// tool, the evidence status and a summary: a prefix of the bounded agent
// result, cut at a rune boundary to Options.MaxSummaryBytes, with truncated
// set when cut. Every other indexed id is excluded with a reason:
//
//	MISSING     the entry is not a valid tool_call_id (only a foreign writer puts one there)
//	EXPIRED     the record is gone; stores cannot tell expiry from removal, and an id
//	            enters the index only when an existing record completes, so gone is EXPIRED
//	CROSS_RUN   the record read under the run's key names another run (or id)
//	PROJECTING  the record is not complete (the indexed call expired and its id was reused)
//	ERROR       the record is ERROR, or in a state no store writes
//
// An id repeated in the index is reported once, at its first position.
// Nothing is copied: a Projection is derived on demand and never stored.
//
// # Progress reports
//
// An agent reports progress as a JSON object with one field, "claims": 1 to
// 64 claims, each with exactly three fields: "text" (1 to 2048 bytes, not
// blank), "kind" ("positive": something was found; "negative": nothing was
// found within the scope of the cited calls) and "cites" (1 to 16 distinct
// tool_call_ids of the run). The whole report is at most 64 KiB of UTF-8.
// Unknown, missing, repeated or null fields, lone surrogate escapes and
// trailing data are refused; the bounds are ReportLimits.
//
//	{"claims": [
//	  {"text": "The refund service timed out against the ledger DB.", "kind": "positive",
//	   "cites": ["call_logs_1", "toolu_01kb"]},
//	  {"text": "No deploy touched the ledger in the last hour.", "kind": "negative",
//	   "cites": ["call_deploys_2"]}
//	]}
//
// Observe checks a report: it is valid when it parses and every claim cites
// only facts, positive claims only EVIDENCE_FOUND facts. Otherwise it is an
// INVALID_PROGRESS_PROTOCOL observation whose findings say which claim, which
// citation and id, and what to fix, for example
//
//	{"claim": 0, "cite": 1, "tool_call_id": "toolu_01kb", "code": "EXCLUDED_ID",
//	 "excluded": "ERROR", "fix": "this call cannot be evidence; cite another call or drop the claim"}
//
// The agent may repair the report and submit it again. Independently, every
// report is counted once with Store.ObserveProgress: invalid reports raise
// the run's violation counter, which repairs never lower, and which
// saturates at ProtocolOptions.Threshold into PROGRESS_PROTOCOL_VIOLATED for
// the rest of the run. The counters live with the run in the store, so all
// workers of a run share them.
//
// # Release
//
// Release is a pure function of the facts, the final report and the run's
// protocol state. Each claim is VERIFIED (positive, citing only
// EVIDENCE_FOUND facts), NEGATIVE (negative, citing only facts, of either
// evidence status) or UNSUPPORTED. The decision is, in this order:
//
//	WITHHELD     the protocol is violated, or the report has no claim:
//	             no claim is released, only the EVIDENCE_FOUND facts
//	PARTIAL      some claim is UNSUPPORTED: claims are marked, and only the facts
//	             cited by supported claims are released
//	NO_EVIDENCE  every claim is NEGATIVE: the cited facts are released as their scope
//	VERIFIED     every claim is supported and at least one is VERIFIED
//
// A decision, as JSON:
//
//	{"outcome": "PARTIAL",
//	 "claims": [
//	   {"index": 0, "text": "The refund service timed out.", "kind": "positive",
//	    "cites": ["call_logs_1"], "verdict": "VERIFIED"},
//	   {"index": 1, "text": "The ledger DB is healthy.", "kind": "positive",
//	    "cites": ["call_db_3"], "verdict": "UNSUPPORTED",
//	    "findings": [{"claim": 1, "cite": 0, "tool_call_id": "call_db_3", "code": "NO_EVIDENCE_FOR_POSITIVE", "fix": "..."}]}],
//	 "facts": [{"position": 0, "tool_call_id": "call_logs_1", "tool": "logs.query",
//	            "evidence": "EVIDENCE_FOUND", "summary": "{\"match_count\":12,...", "truncated": true}],
//	 "reasons": [{"claim": -1, "cite": -1, "code": "UNSUPPORTED_CLAIMS", "fix": "..."}, ...]}
package progress
