// Package registry is the immutable tool registry every tool call is checked
// against before anything runs.
//
// New validates 0 to 128 tool definitions once and freezes them: there is no
// Register, no scanning and no handler inside, so a definition is data and
// can never inject code. Each definition's input and output schemas must fit
// a bounded JSON Schema subset; anything outside it is refused at
// construction with the JSON pointer and keyword at fault. In the subset
// every node names one type and carries that type's bounds: a string its
// maxLength, a number both bounds, an array its maxItems and its items (itself
// a node of the subset, so an array can never smuggle in open objects), an
// object additionalProperties false.
//
// A definition may declare an output schema. Then a caller that executes the
// tool checks every raw response against it (Tool.CanonicalOutput) before
// anything reads the response; a response outside it is the tool's failure,
// EXECUTION_FAILED, or RESULT_TOO_LARGE past MaxOutputBytes. A definition
// without one declares no typed output: CanonicalOutput admits only null, so
// nothing undeclared is ever taken for a validated value, and the raw
// response stays opaque bytes that the caller keeps whole and only its
// projector reads. "No output schema, only null" is a rule about typed
// output; it never drops, rewrites or refuses a raw response.
//
// Prepare turns one call request into a Plan: exact tool identity, a valid
// principal, the Policy port asked for tool.call:<name> and every required
// permission (a deny stops before the input is parsed), one agreed policy
// fence, and only then the strictly parsed, RFC 8785 canonical input with its
// SHA-256 digest and the action digest that approvals and dispatch bind to.
// PrepareRead, for callers that execute only read tools, refuses any other
// effect with NOT_READ_ONLY after the policy and before the input is parsed.
// A plan never executes anything.
//
// The JSON parser and canonicalizer are the package's own, because tool
// input must be refused rather than coerced: duplicate keys, invalid UTF-8,
// lone surrogates, numbers beyond ±(2^53−1) and trailing data are errors.
package registry
