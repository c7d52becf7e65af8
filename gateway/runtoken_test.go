package gateway_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/gateway"
)

func TestRunTokenVerification(t *testing.T) {
	key := []byte(strings.Repeat("s", gateway.MinRunTokenKey))
	now := time.Unix(1_900_000_000, 0)
	tok, err := gateway.MintRunToken(key, "run-1", "alice", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := gateway.VerifyRunToken(key, tok, now.Add(59*time.Minute))
	if err != nil || rt.Run != "run-1" || rt.Principal != "alice" || !rt.Expires.Equal(now.Add(time.Hour)) {
		t.Fatalf("verify = %+v, %v", rt, err)
	}
	// Within the skew after expiry it holds; past it, it does not.
	if _, err := gateway.VerifyRunToken(key, tok, now.Add(time.Hour+gateway.RunTokenSkew-time.Second)); err != nil {
		t.Fatalf("within the skew: %v", err)
	}
	enc := base64.RawURLEncoding
	payload, mac, _ := strings.Cut(tok, ".")
	forged := enc.EncodeToString([]byte(`{"run":"run-1","sub":"mallory","exp":1900003600}`)) + "." + mac
	bad := map[string]string{
		"expired":        tok,
		"forged payload": forged,
		"no mac":         payload,
		"three parts":    tok + ".x",
		"padded":         payload + "=." + mac,
		"oversized":      strings.Repeat("a", gateway.MaxRunTokenBytes+1),
		"empty":          "",
	}
	for name, tk := range bad {
		at := now
		if name == "expired" {
			at = now.Add(time.Hour + gateway.RunTokenSkew)
		}
		if _, err := gateway.VerifyRunToken(key, tk, at); !errors.Is(err, gateway.ErrRunToken) {
			t.Errorf("%s: %v, want ErrRunToken", name, err)
		}
	}
	if _, err := gateway.VerifyRunToken([]byte(strings.Repeat("t", 32)), tok, now); !errors.Is(err, gateway.ErrRunToken) {
		t.Errorf("another key: %v", err)
	}
	// A correctly signed payload must still be exactly the three members,
	// each valid.
	sign := func(p string) string {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(gateway.RunTokenDomain + p))
		return enc.EncodeToString([]byte(p)) + "." + enc.EncodeToString(m.Sum(nil))
	}
	if _, err := gateway.VerifyRunToken(key, sign(`{"run":"run-1","sub":"alice","exp":1900003600}`), now); err != nil {
		t.Fatalf("a token signed by the documented construction: %v", err)
	}
	for _, p := range []string{
		`{"run":"run-1","sub":"alice","exp":1900003600,"admin":true}`,
		`{"run":"run 1","sub":"alice","exp":1900003600}`,
		`{"run":"run-1","sub":"","exp":1900003600}`,
		`{"run":"run-1","sub":"alice"}`,
		`{"run":"run-1","sub":"alice","exp":2900000000}`, // far beyond MaxRunTokenTTL
		`{"run":"run-1","sub":"alice","exp":1900003600} {}`,
	} {
		if _, err := gateway.VerifyRunToken(key, sign(p), now); !errors.Is(err, gateway.ErrRunToken) {
			t.Errorf("signed %s: %v, want ErrRunToken", p, err)
		}
	}
	for _, args := range []struct {
		key            []byte
		run, principal string
		ttl            time.Duration
	}{
		{key[:gateway.MinRunTokenKey-1], "run-1", "alice", time.Hour},
		{key, "bad run", "alice", time.Hour},
		{key, "run-1", "", time.Hour},
		{key, "run-1", "has space", time.Hour},
		{key, "run-1", "alice", 0},
		{key, "run-1", "alice", gateway.MaxRunTokenTTL + time.Second},
	} {
		if _, err := gateway.MintRunToken(args.key, args.run, args.principal, args.ttl, now); err == nil {
			t.Errorf("MintRunToken(%d-byte key, %q, %q, %v) succeeded", len(args.key), args.run, args.principal, args.ttl)
		}
	}
}

// FuzzVerifyRunToken: any input is refused or accepted without panicking,
// in bounded time; an accepted token names a valid run and principal, and
// stops being accepted when any byte of it changes.
func FuzzVerifyRunToken(f *testing.F) {
	key := []byte(strings.Repeat("f", gateway.MinRunTokenKey))
	now := time.Unix(1_900_000_000, 0)
	tok, err := gateway.MintRunToken(key, "run-1", "alice", time.Hour, now)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{tok, "", ".", "a.b", tok + "=", strings.Repeat("A", 100) + "." + strings.Repeat("B", 43)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rt, err := gateway.VerifyRunToken(key, s, now)
		if err != nil {
			if !errors.Is(err, gateway.ErrRunToken) {
				t.Fatalf("refusal %v does not wrap ErrRunToken", err)
			}
			return
		}
		if rt.Run == "" || rt.Principal == "" || !now.Before(rt.Expires.Add(gateway.RunTokenSkew)) {
			t.Fatalf("accepted %q as %+v", s, rt)
		}
		for i := range len(s) {
			b := []byte(s)
			b[i] ^= 0x01
			if _, err := gateway.VerifyRunToken(key, string(b), now); err == nil && string(b) != s {
				t.Fatalf("accepted %q and also %q", s, b)
			}
		}
	})
}
