package redact_test

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors/internal/projtest"
	"github.com/toolcanon/toolcanon/projectors/redact"
)

// credentialPositions are syntaxes that put a value in a credential's
// position; %s is the value.
var credentialPositions = []string{
	"password=%s", `"api_key": "%s"`, "--token %s", "Authorization: Bearer %s", "secret: %s", "requirepass %s",
	"<password>%s</password>", "postgres://app:%s@db01/orders", "DB_PASSWORD='%s'", "-p%s", "X-Auth-Token: %s",
}

// plantedToken returns a random 20-byte value of letters and digits that
// switches class at every byte, as a generated credential does.
func plantedToken(r *rand.Rand) string {
	const classes = "ABCDEFGHIJKLMNOPQRSTUVWXYZ|abcdefghijklmnopqrstuvwxyz|0123456789"
	sets := strings.Split(classes, "|")
	var b strings.Builder
	prev := -1
	for b.Len() < 20 {
		k := r.IntN(3)
		if k == prev {
			k = (k + 1) % 3
		}
		prev = k
		b.WriteByte(sets[k][r.IntN(len(sets[k]))])
	}
	return b.String()
}

// FuzzMasked redacts fuzzed text around a random token in a credential
// position and a handle: the token never comes out, the handle comes out
// as it went in, and valid UTF-8 stays valid.
func FuzzMasked(f *testing.F) {
	f.Add([]byte("login failed for"), []byte("from 10.0.0.1"), uint64(1), uint8(0))
	f.Add([]byte("SELECT * FROM t WHERE a = '"), []byte("'"), uint64(2), uint8(3))
	f.Add([]byte("Traceback (most recent call last):\n  File \"a.py\""), []byte("\n\tat x.Y(Z.java:1)"), uint64(3), uint8(5))
	f.Add([]byte("-----BEGIN CERTIFICATE-----"), []byte("ééé ${X}"), uint64(4), uint8(7))
	f.Add([]byte("<SECRET:AbCd_-12>"), []byte("<ID:zzzzzzz>"), uint64(5), uint8(9))
	// -p and a token ending in Pw, after a certificate's header: read as a
	// flag named for a password, the token was left to the generated
	// values, which the certificate proves public.
	f.Add([]byte("-----BEGIN CERTIFICATE-----"), []byte("0"), uint64(186), uint8(9))
	// An Authorization header after a certificate's BEGIN line with no END
	// line: the cut-off block was taken public to the end of the text.
	f.Add([]byte("-----BEGIN CERTIFICATE-----"), []byte("A"), uint64(79), uint8(3))
	f.Fuzz(func(t *testing.T, prefix, suffix []byte, seed uint64, pos uint8) {
		r := rand.New(rand.NewPCG(seed, 11))
		token := plantedToken(r)
		id := make([]byte, canonical.HandleIDLen)
		const idBytes = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		for i := range id {
			id[i] = idBytes[r.IntN(len(idBytes))]
		}
		handle := string(canonical.AppendHandle(nil, canonical.KindSecret, string(id)))
		tmpl := credentialPositions[int(pos)%len(credentialPositions)]
		msg := []byte(handle + " " + string(prefix) + " " + strings.Replace(tmpl, "%s", token, 1) + " " + string(suffix))
		for _, m := range []canonical.Masker{nil, projtest.Handles{}} {
			out := redact.AppendMasked(nil, msg, m)
			if bytes.Contains(out, []byte(token)) {
				t.Fatalf("the planted %q survives:\n in:  %q\n out: %q", token, msg, out)
			}
			if !bytes.HasPrefix(out, []byte(handle+" ")) {
				t.Fatalf("the handle %q did not come out unchanged:\n in:  %q\n out: %q", handle, msg, out)
			}
			if utf8.Valid(msg) && !utf8.Valid(out) {
				t.Fatalf("valid UTF-8 in, invalid out:\n in:  %q\n out: %q", msg, out)
			}
		}
	})
}
