package redisstore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/internal/redistest"
)

// A reply that its script's RETURNS does not declare is refused by the
// generated decoder, whatever is wrong with it; a declared one decodes.
func TestDecoderRefusesUndeclaredReplies(t *testing.T) {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redistest.Addr(t)}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	eval := func(lua string) rueidis.RedisResult {
		return c.Do(context.Background(), c.B().Eval().Script(lua).Numkeys(0).Build())
	}

	ok, err := decodeBeginReply(eval(`return {'OK', 1, 'l', 's'}`))
	if err != nil || ok.Outcome != "OK" || ok.CreatedMs != 1 || ok.Limits != "l" || ok.Secret != "s" {
		t.Fatalf("declared OK reply: %+v, %v", ok, err)
	}
	inactive, err := decodeBeginReply(eval(`return {'RUN_INACTIVE', 'lost'}`))
	if err != nil || inactive.Reason != "lost" {
		t.Fatalf("declared RUN_INACTIVE reply: %+v, %v", inactive, err)
	}

	bad := map[string]string{
		"one element short":        `return {'OK', 1, 'l'}`,
		"one element more":         `return {'OK', 1, 'l', 's', 9}`,
		"string for an int":        `return {'OK', '1', 'l', 's'}`,
		"int for a string":         `return {'RUN_INACTIVE', 7}`,
		"undeclared outcome":       `return {'MAYBE'}`,
		"outcome not a string":     `return {1, 2}`,
		"refusal with an element":  `return {'DUPLICATE_TOOL_CALL', 'x'}`,
		"nil cuts the array short": `return {'EXISTS', 'READY', 'EVIDENCE_FOUND', '', 1, 2, 3, nil, 5}`,
		"empty array":              `return {}`,
		"not an array":             `return 'OK'`,
	}
	for name, lua := range bad {
		r, err := decodeBeginReply(eval(lua))
		var re *replyError
		if !errors.As(err, &re) {
			t.Errorf("%s: decoded %+v, %v; want a replyError", name, r, err)
		}
	}
	// A server error is passed on as it is, not as a reply mismatch.
	_, err = decodeBeginReply(eval(`return redis.error_reply('BOOM')`))
	var re *replyError
	if err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), "BOOM") {
		t.Fatalf("server error: %v", err)
	}
	// The other scripts' decoders are as strict.
	for name, err := range map[string]error{
		"complete":         second(decodeCompleteReply(eval(`return {'OK', 'READY'}`))),
		"abandon":          second(decodeAbandonReply(eval(`return {'LEASE_ACTIVE'}`))),
		"close_run":        second(decodeCloseRunReply(eval(`return {'OK', 'yes'}`))),
		"observe_progress": second(decodeObserveProgressReply(eval(`return {'OK', 1, 2, 3}`))),
	} {
		if !errors.As(err, &re) {
			t.Errorf("%s decoder accepted an undeclared reply: %v", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }
