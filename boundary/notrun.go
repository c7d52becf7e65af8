package boundary

import (
	"errors"

	"github.com/toolcanon/toolcanon/canonical"
)

// NotRun marks err as the failure of a tool that did nothing: it never
// reached the code that does the work (its server could not be reached or
// started, the call was cancelled before it was sent). Invoke completes the
// record as ERROR with code, which must be a stable code, and the Result
// reports Executed false. An invalid code is EXECUTION_FAILED.
func NotRun(code canonical.Code, err error) error {
	return &notRunError{code: code, err: err}
}

// notRunError is the error NotRun returns.
type notRunError struct {
	code canonical.Code
	err  error
}

func (e *notRunError) Error() string {
	if e.err == nil {
		return "boundary: the tool did not run: " + string(e.code)
	}
	return "boundary: the tool did not run: " + e.err.Error()
}

func (e *notRunError) Unwrap() error { return e.err }

// notRunCode returns the code of a NotRun error, if err is one.
func notRunCode(err error) (canonical.Code, bool) {
	var nr *notRunError
	if !errors.As(err, &nr) {
		return "", false
	}
	if !nr.code.Valid() {
		return canonical.CodeExecutionFailed, true
	}
	return nr.code, true
}
