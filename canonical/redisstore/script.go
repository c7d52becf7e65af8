package redisstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/toolcanon/toolcanon/lua"
)

// script is one lifecycle script of package lua.
type script struct {
	file      string
	src       string
	sha1      string
	retryable bool // RETRY safe: running it twice for one call has the effect of running it once
}

func newScript(file string, retryable bool) *script {
	src := lua.Source(file)
	sum := sha1.Sum([]byte(src))
	return &script{file: file, src: src, sha1: hex.EncodeToString(sum[:]), retryable: retryable}
}

// command is the script's EVALSHA, or with eval its EVAL (for a server that
// does not know it). Trailing "" keys are left out: they are keys the
// script does not reach (the audit stream's, with audit off), and each
// key sent is a string the server makes for the script's KEYS.
func (sc *script) command(b rueidis.Builder, eval bool, keys, args []string) rueidis.Completed {
	for len(keys) > 0 && keys[len(keys)-1] == "" {
		keys = keys[:len(keys)-1]
	}
	if eval {
		return b.Eval().Script(sc.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	return b.Evalsha().Sha1(sc.sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// noScript reports whether the server did not know the script.
func noScript(res rueidis.RedisResult) bool {
	rerr, ok := rueidis.IsRedisErr(res.Error())
	return ok && rerr.IsNoScript()
}

// runner sends a script to the server and returns its raw reply. *Store is
// the runner: it adds WAIT when the store is asked for durability.
type runner interface {
	runScript(ctx context.Context, s *script, keys, args []string) rueidis.RedisResult
}

// replyError is a reply that its script's RETURNS does not declare: the
// script and the store have drifted apart, or something else answered.
type replyError struct {
	script, outcome, msg string
}

func (e *replyError) Error() string {
	if e.outcome == "" {
		return fmt.Sprintf("%s: reply not as declared: %s", e.script, e.msg)
	}
	return fmt.Sprintf("%s: reply %q not as declared: %s", e.script, e.outcome, e.msg)
}

// replyDecoder reads a script's array reply element by element, as the
// generated decoders ask; the first mismatch is kept in err and every later
// read returns a zero value.
type replyDecoder struct {
	script, outcome string
	arr             []rueidis.RedisMessage
	err             error
}

// newReplyDecoder takes the reply apart into its outcome and elements. A
// transport or server error is returned as it is.
func newReplyDecoder(file string, res rueidis.RedisResult) (*replyDecoder, error) {
	if err := res.Error(); err != nil {
		return nil, err
	}
	arr, err := res.ToArray()
	if err != nil {
		return nil, &replyError{script: file, msg: "not an array: " + err.Error()}
	}
	d := &replyDecoder{script: file, arr: arr}
	if len(arr) == 0 {
		return nil, &replyError{script: file, msg: "empty array"}
	}
	if d.outcome, err = arr[0].ToString(); err != nil {
		return nil, &replyError{script: file, msg: "the first element is not a string outcome"}
	}
	return d, nil
}

func (d *replyDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = &replyError{script: d.script, outcome: d.outcome, msg: fmt.Sprintf(format, args...)}
	}
}

// length requires the reply to have exactly n elements.
func (d *replyDecoder) length(n int) {
	if len(d.arr) != n {
		d.fail("%d elements, declared %d", len(d.arr), n)
	}
}

// undeclared refuses an outcome the script does not declare.
func (d *replyDecoder) undeclared() { d.fail("undeclared outcome") }

func (d *replyDecoder) str(i int, name string) string {
	if d.err != nil {
		return ""
	}
	v, err := d.arr[i].ToString()
	if err != nil {
		d.fail("element %d (%s) is not a string: %v", i, name, err)
	}
	return v
}

func (d *replyDecoder) bin(i int, name string) []byte {
	if v := d.str(i, name); v != "" {
		return []byte(v)
	}
	return nil
}

func (d *replyDecoder) num(i int, name string) int64 {
	if d.err != nil {
		return 0
	}
	v, err := d.arr[i].ToInt64()
	if err != nil {
		d.fail("element %d (%s) is not an integer: %v", i, name, err)
	}
	return v
}
