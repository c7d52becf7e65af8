// Package rag projects a retrieval (RAG) tool's response into bounded,
// citable evidence.
//
// Request input: {"query": "..."}. Result:
//
//	{"query":"...","tool_call_id":"...",
//	 "evidence":[{"source":"...","document_id":"...","title":"...","excerpt":"..."}],
//	 "returned":N,"truncated":false}
//
// Excerpts are prefixes of the block's text, cut at a rune boundary to the
// text budget, with what must not reach the model masked (package redact,
// through the call's Masker): a document keeps its words, and the values
// in it are masked as in any tool output. Titles too. When several blocks name the
// same (source, document_id), the first usable one wins, so the result is
// the same for the same response. A response without a usable block (an
// object with a document id, a source and a non-blank excerpt) projects to
// NO_EVIDENCE with the query and an empty list.
//
// # Legacy response
//
// The legacy knowledge service answers:
//
//	{
//	  "success": true,                        // false: the call failed
//	  "message": "ok",
//	  "query": "how are refunds approved",
//	  "domain": "billing",
//	  "context_pack": "…every block's body, concatenated…",
//	  "retrieval_trace": [{"stage": "bm25", "document_id": "…", "score": 12.3}],
//	  "rerank_trace": [{"model": "…", "document_id": "…", "score": 0.91}],
//	  "blocks": [
//	    {"source": "kb", "document_id": "refunds-101", "title": "Refund approval",
//	     "excerpt": "Refunds above 500 EUR need a second approver.",
//	     "content": "…full document body…",
//	     "score": 0.91, "hit_reason": "bm25+rerank", "domain": "billing"}
//	  ]
//	}
//
// Only source, document_id, title and excerpt are read. A block whose
// excerpt is missing or blank is not evidence: its content is the full
// document body, and no body reaches the agent, not even a short one. An
// operator whose backend keeps excerpts under another field names that field
// in Paths.Excerpt. Context packs, traces, scores, hit reasons, domains,
// messages and full bodies never reach the result. A response that
// is not valid JSON, reports success=false or has no blocks array is an
// error (PROJECTION_FAILED).
//
// Other backends are projected by configuring Paths (gjson syntax) instead
// of writing code.
package rag
