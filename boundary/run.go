package boundary

import (
	"context"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/registry"
)

// CloseRun closes the run for its principal: later calls get RUN_INACTIVE.
// A run of another principal is RUN_FORBIDDEN and stays as it is.
func (b *Boundary) CloseRun(ctx context.Context, run RunContext) (err error) {
	ctx, cancel := context.WithTimeout(ctx, b.storeTimeout)
	defer cancel()
	defer recoverStore(&err, "close run")
	return b.store.CloseRun(ctx, run.ID, run.Principal.Subject)
}

// Usage returns the run's counters to its principal. The run's owner is
// checked in the read itself (canonical.OwnedReader), or before it:
// another principal gets RUN_FORBIDDEN and learns nothing of the run.
func (b *Boundary) Usage(ctx context.Context, run RunContext) (u canonical.RunUsage, err error) {
	ctx, cancel := context.WithTimeout(ctx, b.storeTimeout)
	defer cancel()
	defer recoverStore(&err, "read run")
	if o, ok := b.store.(canonical.OwnedReader); ok {
		return o.ReadUsage(ctx, run.ID, run.Principal.Subject) // the owner checked in the read
	}
	if err := b.store.CheckPrincipal(ctx, run.ID, run.Principal.Subject); err != nil {
		return canonical.RunUsage{}, err // NOT_FOUND for a run nobody wrote
	}
	return b.store.Usage(ctx, run.ID)
}

// Records returns records of the run to its principal, as GetMany does
// (a missing record is nil), after the same owner check as Usage; a run
// nobody wrote has none.
func (b *Boundary) Records(ctx context.Context, run RunContext, ids []string, opts canonical.ReadOptions) (recs []*canonical.Record, err error) {
	ctx, cancel := context.WithTimeout(ctx, b.storeTimeout)
	defer cancel()
	defer recoverStore(&err, "read records")
	if err := canonical.ValidateRead(run.ID, ids); err != nil {
		return nil, err
	}
	if o, ok := b.store.(canonical.OwnedReader); ok {
		// The owner checked in the read; only records of the run's
		// generation.
		recs, err = o.ReadRecords(ctx, run.ID, run.Principal.Subject, "", ids, opts)
	} else if err = b.store.CheckPrincipal(ctx, run.ID, run.Principal.Subject); err == nil {
		recs, err = b.store.GetMany(ctx, run.ID, ids, opts)
	}
	if canonical.CodeOf(err) == canonical.CodeNotFound {
		return make([]*canonical.Record, len(ids)), nil
	}
	return recs, err
}

// Authorize asks the boundary's policy whether the run's principal may
// call name, a tool the host serves itself rather than through Invoke (the
// gateway's progress tools): the permission registry.CallPermissionPrefix
// + name, as for every bound tool. It returns nil when allowed;
// UNAUTHORIZED when denied or when the principal is malformed or expired;
// APPROVAL_REQUIRED when the policy wants an approval, which such a tool
// cannot wait for; POLICY_UNAVAILABLE when the policy fails.
func (b *Boundary) Authorize(ctx context.Context, run RunContext, name string) (err error) {
	p := run.Principal
	if p.Subject == "" || len(p.Subject) > 256 || canonical.ValidatePrincipal(p.Subject) != nil {
		return canonical.Errorf(canonical.CodeUnauthorized, "boundary: principal subject is malformed")
	}
	if p.ExpiresAt.IsZero() || !time.Now().Before(p.ExpiresAt) {
		return canonical.Errorf(canonical.CodeUnauthorized, "boundary: principal %q expired or has no expiry", p.Subject)
	}
	perm := registry.CallPermissionPrefix + name
	defer func() {
		if v := recover(); v != nil {
			err = canonical.Errorf(canonical.CodePolicyUnavailable, "boundary: policy panicked authorizing %s: %v", perm, v)
		}
	}()
	d, err := b.policy.Authorize(ctx, run.Project, p, perm)
	if err != nil {
		return canonical.Wrap(canonical.CodePolicyUnavailable, err, "boundary: authorizing "+perm)
	}
	switch d.Verdict {
	case registry.VerdictAllow:
		return nil
	case registry.VerdictDeny:
		return canonical.Errorf(canonical.CodeUnauthorized, "boundary: %q denied %q in project %q", p.Subject, perm, run.Project)
	case registry.VerdictRequireApproval:
		return canonical.Errorf(canonical.CodeApprovalRequired, "boundary: %q needs an approval for %q", p.Subject, perm)
	}
	return canonical.Errorf(canonical.CodePolicyUnavailable, "boundary: malformed decision %q for %q", d.Verdict, perm)
}
