// Package mcpresult projects the result of an MCP tools/call (a
// CallToolResult, as JSON) into a bounded, redacted result an agent can use.
//
// The projection reads structuredContent when the result has one, else its
// text content: a single text block that holds a JSON object or array is
// read as JSON, any other text is read as text (several blocks joined by a
// newline). Other content blocks (images, audio, resource links, embedded
// resources) pass as "attachments" or are named in "withheld", as Media
// says; anything withheld also marks the result truncated. Result:
//
//	{"tool_call_id":"call_1","content":<the JSON, or the text as a string>,"truncated":false}
//
// JSON stays JSON within the budgets of projectors.Limits: Text bounds each
// string, Items the elements of an array, Collection and Item the bytes of
// an array and of one element, MaxMembers the members of an object, and
// MaxDepth the nesting; Total bounds the whole result. Strings are cut at a
// rune boundary; any cut or drop sets "truncated": true. Every string, and
// every member name, is redacted (package redact) before it is cut, and a
// member whose name marks a secret or an identifier (password, api_key,
// authorization, user, host, …) has its value replaced by the placeholder
// whatever its type.
//
// A result with nothing in it (no structuredContent or an empty one, no
// text but blanks) projects to NO_EVIDENCE with "content": null. A result
// with isError, or one that is not a CallToolResult, is an error: the
// gateway records an upstream error result as EXECUTION_FAILED before any
// projector runs.
//
// Wrap runs another projector (package rag, package querylog) on the JSON a
// result carries, with an input built from the call's arguments, so that
// those projectors serve MCP tools unchanged.
package mcpresult
