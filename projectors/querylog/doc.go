// Package querylog projects a log-query tool's response into a bounded,
// redacted summary: mined patterns and a short timeline.
//
// Request input: {"topic": "...", "query": "...", "lookback_minutes": 60}
// (lookback optional; see ParseRequest for the bounds). Result:
//
//	{"source_kind":"MOCK","tool_call_id":"...",
//	 "scope":{"topic":"...","query":"...","lookback_minutes":60,"from":"...","to":"..."},
//	 "match_count":N,
//	 "patterns":[{"pattern":"...","count":N,"level":"ERROR","first_seen":"...","last_seen":"..."}],
//	 "timeline":[{"ts":"...","level":"ERROR","message":"..."}],
//	 "returned":N,"truncated":false}
//
// tool_call_id is the framework's id of the call, exactly as given.
// match_count counts every entry of the response; returned counts the
// timeline events in the result. A projection costs time linear in the
// response, whatever it holds: each message is cut to
// Config.MaxMessageBytes before it is redacted or mined (truncated says
// so), the miner compares a message with a bounded number of clusters, and
// the context is checked every 64 KiB of work. Every message is redacted (package redact)
// before it is mined (package drain) or shown, so patterns and events carry
// typed placeholders, never the values. Instance and metrics fields are
// never read. Levels are normalised to FATAL, ERROR, WARN, INFO, DEBUG,
// TRACE or UNKNOWN, and patterns are mined per level. Patterns are ordered
// by count, then first appearance; the timeline keeps the source's order.
//
// A successful response without entries projects to NO_EVIDENCE with the
// full scope. A response that is not valid JSON, reports success other than
// true, has no entries array, or has an entry without an RFC 3339 timestamp
// or a message, is an error (PROJECTION_FAILED): the caller records ERROR.
//
// # Legacy response
//
// The Mock source (and the legacy log service it stands for) answers:
//
//	{
//	  "success": true,
//	  "error": "…",                                  // only when success is false
//	  "source": "mock", "topic": "checkout", "query": "timeout",
//	  "window": {"from": "2026-03-01T09:00:00Z", "to": "2026-03-01T10:00:00Z"},
//	  "total": 1,
//	  "entries": [
//	    {"timestamp": "2026-03-01T09:12:03.125Z", "level": "ERROR", "service": "checkout-api",
//	     "message": "payment timeout after 3000ms for order 81723",
//	     "instance": "checkout-api-7d9f8b6c5d-x2k4p",
//	     "metrics": {"latency_ms": 3004, "cpu": 0.82}}
//	  ]
//	}
//
// Other backends are projected by configuring Paths (gjson syntax) and
// SourceKind instead of writing code.
package querylog
