package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
	"github.com/toolcanon/toolcanon/canonical/redisstore/redisconn"
)

// EnvRedisPassword names the environment variable that holds the Redis
// password by default. A password is never taken from the command line,
// where ps and shell history would show it.
const EnvRedisPassword = redisconn.EnvPassword

// redisFlags are the connection flags every command shares: the flags of
// one redisconn.Spec, which the gateway's configuration spells as its
// "redis" object.
type redisFlags struct {
	spec   redisconn.Spec
	config string                  // the configuration file the spec came from, if it did
	audit  *canonical.AuditOptions // the store's audit stream, when on
}

func (f *redisFlags) register(fs *flag.FlagSet) { f.spec.Flags(fs) }

// given reports whether --redis names a server.
func (f *redisFlags) given() bool { return f.spec.URL != "" }

// check reports a connection flag that is refused (--password) or does not
// fit the others, before anything else is done; with none given, nothing.
func (f *redisFlags) check() error {
	if f.spec.IsZero() {
		return nil
	}
	return flagError(f.spec.Validate())
}

// open connects, turning failures into messages a person understands.
func (f *redisFlags) open() (*redisstore.Store, error) {
	open := redisconn.Open
	if f.audit != nil {
		open = func(spec redisconn.Spec) (*redisstore.Store, error) {
			o, err := spec.Options()
			if err != nil {
				return nil, err
			}
			o.Audit = f.audit
			s, err := redisstore.New(o)
			if canonical.CodeOf(err) == canonical.CodeStoreUnavailable {
				return nil, canonical.Errorf(canonical.CodeStoreUnavailable, "cannot reach Redis at %s: %v", spec, err)
			}
			return s, err
		}
	}
	s, err := open(f.spec)
	if err == nil {
		return s, nil
	}
	var ce *canonical.Error
	if canonical.CodeOf(err) == canonical.CodeStoreUnavailable && errors.As(err, &ce) {
		return nil, errors.New(ce.Msg) // "cannot reach Redis at …: cause"
	}
	if f.config != "" {
		var e *redisconn.Error
		if errors.As(err, &e) {
			return nil, fmt.Errorf("%s: redis: %w", f.config, err)
		}
		return nil, err
	}
	return nil, flagError(err)
}

// specError renders a Spec's error with the flags' names; it stays
// INVALID_ARGUMENT.
type specError struct{ e *redisconn.Error }

func (e specError) Error() string { return e.e.Text(true) }
func (e specError) Unwrap() error { return e.e }

func flagError(err error) error {
	var e *redisconn.Error
	if errors.As(err, &e) {
		return specError{e}
	}
	return err
}
