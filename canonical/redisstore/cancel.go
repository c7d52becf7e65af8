package redisstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
)

// The cancel relay lets one gateway replica stop a call another one runs
// (gateway.CancelRelay) without a command per call: nothing is written
// while calls run and no cancel comes. A cancel is written once, by the
// replica that receives it, to a log every replica reads with one blocking
// read of its own:
//
//	<prefix>:{cancels}        STREAM of the cancels sent, each {k: key, id: the cancel's id};
//	                          capped at cancelLogMax entries, expiring cancelLogTTL after the last
//	<prefix>:{cancel:<key>}   STRING, the claim of a cancel: "<id>|<holder>" when one call claims
//	                          it, "<id>|" when more than one does; expiring claimTTL after the first
//
// key is the caller's (hex, no braces or colons), so that a claim has a
// hash tag no run id can equal (a run id has no colon).
const (
	cancelLogMax = 1024
	cancelLogTTL = 10 * time.Minute
	claimTTL     = time.Minute
	// cancelBlock is how long one read of the log waits for a cancel.
	cancelBlock = 5 * time.Second
)

// sendCancelScript appends a cancel to the log and keeps the log alive.
//
//	KEYS[1] -> <prefix>:{cancels}
//	ARGV[1] -> the cancel's key
//	ARGV[2] -> the cancel's id
//	ARGV[3] -> the log's cap, in entries
//	ARGV[4] -> the log's TTL in milliseconds
//	RETURNS the entry's id
var sendCancelScript = rueidis.NewLuaScript(`
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '*', 'k', ARGV[1], 'id', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return id
`)

// claimCancelScript claims a cancel for one holder, or for several
// (holder ""): the first claim of a cancel holds it, any other claim of it
// makes it held by none. A claim of the holder again reads it.
//
//	KEYS[1] -> <prefix>:{cancel:<key>}
//	ARGV[1] -> the cancel's id
//	ARGV[2] -> the holder ("" for several calls at once)
//	ARGV[3] -> TTL in milliseconds
//	RETURNS the holder of the cancel now ("" when none)
var claimCancelScript = rueidis.NewLuaScriptRetryable(`
local head = ARGV[1] .. '|'
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, #head) ~= head then
  redis.call('SET', KEYS[1], head .. ARGV[2], 'PX', ARGV[3])
  return ARGV[2]
end
if ARGV[2] ~= '' and v == head .. ARGV[2] then
  return ARGV[2]
end
redis.call('SET', KEYS[1], head, 'KEEPTTL')
return ''
`)

// relayName checks one of the relay's names: a key, an id or a holder.
func relayName(what, s string, empty bool) error {
	if s == "" && empty {
		return nil
	}
	if s == "" || len(s) > 64 || strings.ContainsAny(s, "{}:| \t\r\n") {
		return canonical.Errorf(canonical.CodeInvalidArgument, "cancel relay: %s %q is not usable", what, s)
	}
	return nil
}

func (s *Store) cancelLog() string { return s.keys.Prefix() + ":{cancels}" }

// SendCancel tells every replica that the call under key is cancelled;
// id names this cancel (gateway.CancelRelay).
func (s *Store) SendCancel(ctx context.Context, key, id string) error {
	if err := relayName("key", key, false); err != nil {
		return err
	}
	if err := relayName("id", id, false); err != nil {
		return err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	err := sendCancelScript.Exec(ctx, s.c, []string{s.cancelLog()},
		[]string{key, id, strconv.Itoa(cancelLogMax), strconv.FormatInt(cancelLogTTL.Milliseconds(), 10)}).Error()
	return cancelErr(err, "send a cancel")
}

// ListenCancels calls deliver with the key and id of every cancel sent from
// its start on, in the order they were sent, until ctx ends; one blocking
// read at a time, whatever the calls in flight. A read that fails is tried
// again from where the last one ended, so that a lost connection loses no
// cancel still in the log (gateway.CancelRelay). It returns ctx's error.
func (s *Store) ListenCancels(ctx context.Context, deliver func(key, id string)) error {
	last := ""
	pause := 50 * time.Millisecond
	wait := func() {
		t := time.NewTimer(pause)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		pause = min(2*pause, 2*time.Second)
	}
	for ctx.Err() == nil {
		if last == "" {
			// Where the log ends now, in the server's ids: what is sent
			// from here on is read, and nothing sent before.
			rctx, cancel := s.bound(ctx)
			entries, err := s.c.Do(rctx, s.c.B().Xrevrange().Key(s.cancelLog()).End("+").Start("-").Count(1).Build()).AsXRange()
			cancel()
			switch {
			case err != nil && !rueidis.IsRedisNil(err):
				wait()
				continue
			case len(entries) > 0:
				last = entries[0].ID
			default:
				last = "0-0"
			}
		}
		rctx, cancel := context.WithTimeout(ctx, cancelBlock+s.timeout)
		streams, err := s.c.Do(rctx, s.c.B().Xread().Count(100).Block(cancelBlock.Milliseconds()).
			Streams().Key(s.cancelLog()).Id(last).Build()).AsXRead()
		cancel()
		if rueidis.IsRedisNil(err) {
			continue // nothing within the block
		}
		if err != nil {
			wait()
			continue
		}
		pause = 50 * time.Millisecond
		for _, e := range streams[s.cancelLog()] {
			last = e.ID
			if k, id := e.FieldValues["k"], e.FieldValues["id"]; relayName("key", k, false) == nil && relayName("id", id, false) == nil {
				deliver(k, id)
			}
		}
	}
	return ctx.Err()
}

// ClaimCancel claims the cancel id of key for holder, one call this
// replica runs under key, or for none when it runs several (holder ""), and
// returns who holds it now: holder when no other claim came, "" when
// another did (gateway.CancelRelay).
func (s *Store) ClaimCancel(ctx context.Context, key, id, holder string) (string, error) {
	if err := relayName("key", key, false); err != nil {
		return "", err
	}
	if err := relayName("id", id, false); err != nil {
		return "", err
	}
	if err := relayName("holder", holder, true); err != nil {
		return "", err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	got, err := claimCancelScript.Exec(ctx, s.c, []string{s.keys.Prefix() + ":{cancel:" + key + "}"},
		[]string{id, holder, strconv.FormatInt(claimTTL.Milliseconds(), 10)}).ToString()
	return got, cancelErr(err, "claim a cancel")
}

// cancelErr is nil for nil, else the error as unavailable makes it.
func cancelErr(err error, op string) error {
	if err == nil {
		return nil
	}
	return unavailable(err, op)
}
