package registry

import (
	"fmt"
	"strings"

	"github.com/toolcanon/toolcanon/canonical"
)

// SyntaxError reports JSON that the strict parser refuses. It unwraps to a
// *canonical.Error, so errors.Is(err, canonical.ErrInvalidInput) and
// canonical.CodeOf work on it.
type SyntaxError struct {
	Offset int64  // byte offset in the document where the problem was found
	Reason string // what is wrong, for operators
	code   canonical.Code
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("registry: %s: invalid JSON at byte %d: %s", e.code, e.Offset, e.Reason)
}

// Unwrap relates the error to its stable code.
func (e *SyntaxError) Unwrap() error { return &canonical.Error{Code: e.code, Msg: e.Reason} }

// SchemaError reports a schema outside the supported subset. It is returned
// by New and carries INVALID_ARGUMENT.
type SchemaError struct {
	Tool    string // name@version of the definition
	Schema  string // "input" or "output"
	Path    string // RFC 6901 JSON pointer to the offending schema node; "" is the root
	Keyword string // the keyword that is refused or wrong
	Reason  string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("registry: %s: %s %s schema at %q: keyword %q: %s",
		canonical.CodeInvalidArgument, e.Tool, e.Schema, e.Path, e.Keyword, e.Reason)
}

// Unwrap relates the error to INVALID_ARGUMENT.
func (e *SchemaError) Unwrap() error {
	return &canonical.Error{Code: canonical.CodeInvalidArgument, Msg: e.Reason}
}

// ValidationError reports a JSON value that its schema refuses. Inputs carry
// INVALID_INPUT; outputs carry EXECUTION_FAILED, because a tool that returns
// what it declared it would not has failed.
type ValidationError struct {
	Path    string // RFC 6901 JSON pointer into the value; "" is the root
	Keyword string // the schema keyword that failed
	Reason  string
	code    canonical.Code
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("registry: %s: value at %q fails %q: %s", e.code, e.Path, e.Keyword, e.Reason)
}

// Unwrap relates the error to its stable code.
func (e *ValidationError) Unwrap() error { return &canonical.Error{Code: e.code, Msg: e.Reason} }

// pointerEscape escapes one reference token per RFC 6901.
func pointerEscape(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
