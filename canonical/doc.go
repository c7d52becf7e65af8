// Package canonical defines the one canonical record of a tool call and the
// contract every store of such records honours.
//
// It owns the vocabulary shared by every other package: the Record and its
// lifecycle Status, the Evidence status, the stable error Codes, the identity
// rules for tool_call_id, run_id and key prefixes, the Redis key layout, the
// capacity Limits, and the Store interface. It imports only the standard
// library and knows nothing about Redis or agents.
//
// The lifecycle is PROJECTING → READY or PROJECTING → ERROR, and nothing else.
// Stores enforce it atomically: on Redis every transition is one Lua script.
// A call is ended by its owner's Complete, or, when its worker died and its
// lease passed, by Abandon (ERROR/EXECUTION_ABANDONED). A run's limits belong
// to the run: its first Begin fixes them.
package canonical
