// Package projectors turns a tool's raw JSON response into the small,
// bounded result an agent sees, plus the evidence status of the call.
//
// A projector runs on every call, so it never unmarshals a raw response.
// Valid checks the whole document once (strings eight bytes at a time);
// Locate, LocateMany, EachElement and EachMember then walk it as sub-slices,
// skipping what the projection does not need, and gjson reads the fields of
// the few elements that are projected. WalkValid does all of it in one pass:
// it checks the document while it finds the members and reads an array of
// records, so that a response of plain keys is read once. The result is written through a
// Writer that enforces per-item, per-collection and total UTF-8 byte
// budgets: whatever the input, the result is valid JSON no larger than the
// total budget, and any cut sets "truncated": true. A call allocates its
// result and little else, however large the response.
//
// The RAG projector lives in package rag, the query-log projector in package
// querylog, log redaction in package redact and template mining in package
// drain.
package projectors
