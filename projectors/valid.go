package projectors

import "github.com/toolcanon/toolcanon/internal/strictjson"

// MaxDepth bounds the nesting of a JSON document that Valid accepts, so that
// a hostile response cannot exhaust the stack.
const MaxDepth = strictjson.MaxDepth

// Valid reports whether b is one strict JSON value: RFC 8259 with valid
// UTF-8, surrogate escapes only in pairs, no duplicate member names and at
// most MaxDepth levels of nesting. It is the one strict JSON of the module
// (package strictjson), so a response the projectors accept is one every
// other part accepts too.
func Valid(b []byte) bool { return strictjson.Valid(b) }

// skipWS returns the index of the first byte at or after i that is not
// white space.
func skipWS(b []byte, i int) int { return strictjson.SkipSpace(b, i) }

// stringEnd returns the index just after the string that starts at doc[i]
// in a valid document.
func stringEnd(doc []byte, i int) int { return strictjson.SkipString(doc, i) }
