package redisstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
)

// Cancel registrations let one gateway replica stop a call another one
// runs (gateway.CancelRelay). One STRING per call in flight:
//
//	<prefix>:{cancel:<key>}   "r:<nonce>" registered, "c:<nonce>" cancelled,
//	                          "x:" ambiguous (two calls registered under one key)
//
// key is the caller's (hex, no braces or colons), so that the key has its
// own hash tag, which no run id can equal (a run id has no colon). It is
// written with the call's TTL and never outlives it.

// registerScript registers a call, or marks the key ambiguous when another
// call holds it, so that a cancel never stops the wrong one.
//
//	KEYS[1] -> <prefix>:{cancel:<key>}
//	ARGV[1] -> the registering replica's nonce
//	ARGV[2] -> TTL in milliseconds
//	RETURNS 1 when registered, 0 when the key is now ambiguous
var registerScript = rueidis.NewLuaScriptRetryable(`
local v = redis.call('GET', KEYS[1])
if v and v ~= 'r:' .. ARGV[1] then
  redis.call('SET', KEYS[1], 'x:', 'PX', ARGV[2])
  return 0
end
redis.call('SET', KEYS[1], 'r:' .. ARGV[1], 'PX', ARGV[2])
return 1
`)

// cancelScript marks a registration cancelled, keeping its TTL; an
// ambiguous one stays as it is.
//
//	KEYS[1] -> <prefix>:{cancel:<key>}
//	RETURNS 1 when a registration was found (and is now cancelled), else 0
var cancelScript = rueidis.NewLuaScriptRetryable(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
if string.sub(v, 1, 2) == 'r:' then
  redis.call('SET', KEYS[1], 'c:' .. string.sub(v, 3), 'KEEPTTL')
end
return 1
`)

// forgetScript deletes a registration that is still the caller's.
//
//	KEYS[1] -> <prefix>:{cancel:<key>}
//	ARGV[1] -> the registering replica's nonce
//	RETURNS 1 when deleted, else 0
var forgetScript = rueidis.NewLuaScriptRetryable(`
local v = redis.call('GET', KEYS[1])
if v == 'r:' .. ARGV[1] or v == 'c:' .. ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

func (s *Store) cancelKey(key string) (string, error) {
	if key == "" || len(key) > 64 || strings.ContainsAny(key, "{}: \t\r\n") {
		return "", canonical.Errorf(canonical.CodeInvalidArgument, "cancel key %q is not usable", key)
	}
	return s.keys.Prefix() + ":{cancel:" + key + "}", nil
}

// RegisterCall registers a call in flight under key for at most ttl
// (gateway.CancelRelay).
func (s *Store) RegisterCall(ctx context.Context, key, nonce string, ttl time.Duration) error {
	k, err := s.cancelKey(key)
	if err != nil {
		return err
	}
	if nonce == "" || ttl < time.Millisecond {
		return canonical.Errorf(canonical.CodeInvalidArgument, "a registration needs a nonce and a TTL of at least 1ms")
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	err = registerScript.Exec(ctx, s.c, []string{k}, []string{nonce, strconv.FormatInt(ttl.Milliseconds(), 10)}).Error()
	return cancelErr(err, "register a call")
}

// CancelCall marks the call registered under key cancelled and reports
// whether one was registered (gateway.CancelRelay).
func (s *Store) CancelCall(ctx context.Context, key string) (bool, error) {
	k, err := s.cancelKey(key)
	if err != nil {
		return false, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	n, err := cancelScript.Exec(ctx, s.c, []string{k}, nil).AsInt64()
	return n == 1, cancelErr(err, "cancel a call")
}

// CallCancelled reports whether the call registered under key with nonce
// was marked cancelled (gateway.CancelRelay).
func (s *Store) CallCancelled(ctx context.Context, key, nonce string) (bool, error) {
	k, err := s.cancelKey(key)
	if err != nil {
		return false, err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	v, err := s.c.Do(ctx, s.c.B().Get().Key(k).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return false, nil
	}
	return v == "c:"+nonce, cancelErr(err, "read a call's cancel")
}

// ForgetCall removes the registration of key when it is still nonce's
// (gateway.CancelRelay).
func (s *Store) ForgetCall(ctx context.Context, key, nonce string) error {
	k, err := s.cancelKey(key)
	if err != nil {
		return err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return cancelErr(forgetScript.Exec(ctx, s.c, []string{k}, []string{nonce}).Error(), "forget a call")
}

// cancelErr is nil for nil, else the error as unavailable makes it.
func cancelErr(err error, op string) error {
	if err == nil {
		return nil
	}
	return unavailable(err, op)
}
