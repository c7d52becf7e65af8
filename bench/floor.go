package bench

import (
	"context"
	"errors"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
)

// Floor writes the bytes of a lifecycle with no logic at all: one HSET of
// the request at Begin and one HSET of the raw response and the result at
// Complete, on redisstore's key of the record, through a rueidis client
// with redisstore's options, which pipelines the commands of concurrent
// callers on one connection as it does the scripts'. No expiry, no check,
// no counter: it is what the server can do at all with the same bytes and
// the same client, the floor the scripts' work is measured from. It makes
// no promise, so the contention scenarios are not run on it (Check would
// fail on its missing expiry).
type Floor struct {
	roundTrips
	c    rueidis.Client
	keys canonical.Keys
}

// NewFloor connects the floor to addrs (one server, or the nodes of a
// cluster).
func NewFloor(addrs []string, cfg Config) (*Floor, error) {
	keys, err := canonical.NewKeys(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	c, err := rueidis.NewClient(redisstore.Options{Addrs: addrs}.ClientOption())
	if err != nil {
		return nil, err
	}
	f := &Floor{keys: keys}
	f.c = countRueidis(c, &f.roundTrips)
	return f, nil
}

// Name implements Impl.
func (f *Floor) Name() string { return NameFloor }

// Begin implements Impl: it always says execute.
func (f *Floor) Begin(ctx context.Context, c Call, request []byte) (bool, error) {
	err := f.c.Do(ctx, f.c.B().Hset().Key(f.keys.Record(c.RunID, c.ToolCallID)).FieldValue().
		FieldValue("request", rueidis.BinaryString(request)).Build()).Error()
	return err == nil, err
}

// Complete implements Impl: it always says the completion was made.
func (f *Floor) Complete(ctx context.Context, c Call, raw, result []byte) (bool, error) {
	err := f.c.Do(ctx, f.c.B().Hset().Key(f.keys.Record(c.RunID, c.ToolCallID)).FieldValue().
		FieldValue("raw", rueidis.BinaryString(raw)).FieldValue("result", rueidis.BinaryString(result)).Build()).Error()
	return err == nil, err
}

// Raw implements Impl.
func (f *Floor) Raw(ctx context.Context, c Call) ([]byte, error) {
	return f.c.Do(ctx, f.c.B().Hget().Key(f.keys.Record(c.RunID, c.ToolCallID)).Field("raw").Build()).AsBytes()
}

// ErrNoExpiry is returned by Floor.Expiry: the floor sets none.
var ErrNoExpiry = errors.New("bench: the floor sets no expiry")

// Expiry implements Impl: the floor's records never expire.
func (f *Floor) Expiry(context.Context, Call) (Expiry, error) { return Expiry{}, ErrNoExpiry }

// Close implements Impl.
func (f *Floor) Close() error {
	f.c.Close()
	return nil
}
