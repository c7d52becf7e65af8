// Package storeimpl holds what every canonical.Store implementation applies
// alike and no user of a store calls: the checking of a BeginRequest and the
// finishing of an accepted Completion's record. It lives under internal so
// that canonical's exported API is only what users need.
package storeimpl

import (
	"errors"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// BeginArgs are a BeginRequest's arguments as a store applies them.
type BeginArgs struct {
	TTL    time.Duration    // the record's TTL: the request's, or the store's default
	Lease  time.Duration    // the request's lease, cut to the TTL; the TTL when none
	Limits canonical.Limits // the limits as given: a zero field means the run's
	NewRun canonical.Limits // the limits of a run that has none yet: Limits with defaults
}

// ValidateBegin checks every argument of req without touching a store.
// ttlDefault is the store's default TTL (0: none), used when req.TTL is zero.
func ValidateBegin(req *canonical.BeginRequest, ttlDefault time.Duration) (BeginArgs, error) {
	var a BeginArgs
	if err := canonical.ValidateRunID(req.RunID); err != nil {
		return a, err
	}
	if err := canonical.ValidateToolCallID(req.ToolCallID); err != nil {
		return a, err
	}
	if err := canonical.ValidateToolName(req.Tool); err != nil {
		return a, err
	}
	if err := canonical.ValidateOwner(req.Owner); err != nil {
		return a, err
	}
	if err := canonical.ValidatePrincipal(req.Principal); err != nil {
		return a, err
	}
	if err := checkRequest(req.Request); err != nil {
		return a, err
	}
	ttl := req.TTL
	if ttl == 0 {
		ttl = ttlDefault
	}
	if ttl <= 0 {
		return a, canonical.Errorf(canonical.CodeInvalidArgument, "TTL must be positive (got %v)", req.TTL)
	}
	if ttl < time.Millisecond {
		return a, canonical.Errorf(canonical.CodeInvalidArgument, "TTL must be at least 1ms (got %v)", req.TTL)
	}
	if ttl > canonical.MaxTTL {
		return a, canonical.Errorf(canonical.CodeInvalidArgument, "TTL must be at most %v (got %v)", canonical.MaxTTL, ttl)
	}
	switch {
	case req.Lease > canonical.MaxTTL:
		return a, canonical.Errorf(canonical.CodeInvalidArgument, "lease must be at most %v (got %v)", canonical.MaxTTL, req.Lease)
	case req.Lease < 0:
		return a, canonical.Errorf(canonical.CodeInvalidArgument, "lease must not be negative (got %v)", req.Lease)
	case req.Lease > 0 && req.Lease < time.Millisecond:
		return a, canonical.Errorf(canonical.CodeInvalidArgument, "lease must be at least 1ms (got %v)", req.Lease)
	}
	if err := req.Limits.Validate(); err != nil {
		return a, err
	}
	lease := req.Lease.Truncate(time.Millisecond)
	if lease == 0 || lease > ttl {
		lease = ttl
	}
	return BeginArgs{TTL: ttl.Truncate(time.Millisecond), Lease: lease, Limits: req.Limits, NewRun: req.Limits.WithDefaults()}, nil
}

// checkRequest refuses a request that is not one strict JSON object —
// not JSON, not an object, trailing data, invalid UTF-8, a lone surrogate
// escape, a repeated name, nesting too deep — with INVALID_ARGUMENT, the one
// code of a malformed request at the store: the boundary only ever stores
// canonical requests, so such a request is its caller's fault, not an agent's
// input to fix (that is INVALID_INPUT, at preflight).
func checkRequest(b []byte) error {
	err := strictjson.Check(b, strictjson.MaxDepth)
	var se *strictjson.SyntaxError
	if errors.As(err, &se) {
		return canonical.Errorf(canonical.CodeInvalidArgument, "request is not strict JSON: %s at byte %d", se.Reason, se.Offset)
	}
	// One strict JSON value: an object when it starts with '{' (no second
	// parse).
	if i := strictjson.SkipSpace(b, 0); err != nil || i >= len(b) || b[i] != '{' {
		return canonical.Errorf(canonical.CodeInvalidArgument, "request must be a JSON object")
	}
	return nil
}

// FinishCompletion fills in what a store knows of a completion it accepted:
// the lifecycle fields in rec come from the store; raw and result are those
// of c unless the store refused them for their size (overflow), in which case
// the record is ERROR/RESULT_TOO_LARGE and a RESULT_TOO_LARGE error is
// returned with it. Stores call it so that every store answers alike.
func FinishCompletion(rec canonical.Record, c canonical.Completion, overflow bool) (canonical.Record, error) {
	if overflow {
		return rec, canonical.Errorf(canonical.CodeResultTooLarge, "completion is over a byte limit: the record is ERROR/RESULT_TOO_LARGE with no raw or result")
	}
	if len(c.Raw) > 0 {
		rec.Raw, rec.RawLen = c.Raw, len(c.Raw)
	}
	if rec.Status == canonical.StatusReady {
		rec.Result = c.Result
	}
	return rec, nil
}

// ValidateHandleRead checks the arguments of a HandleSources read.
func ValidateHandleRead(runID, principal string, ids []string) error {
	if err := canonical.ValidateRunID(runID); err != nil {
		return err
	}
	if err := canonical.ValidatePrincipal(principal); err != nil {
		return err
	}
	if len(ids) > canonical.MaxHandlesPerCall {
		return canonical.Errorf(canonical.CodeInvalidArgument, "at most %d handle ids at once (got %d)", canonical.MaxHandlesPerCall, len(ids))
	}
	for _, id := range ids {
		if !canonical.ValidHandleID(id) {
			return canonical.Errorf(canonical.CodeInvalidArgument, "%q is not a handle id", id)
		}
	}
	return nil
}
