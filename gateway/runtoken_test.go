package gateway_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/gateway"
)

// testKeys are a gateway's verifier: audience "support-eu", keys k1 and k2.
func testKeys() (*gateway.RunTokenKeys, gateway.RunTokenKey, gateway.RunTokenKey) {
	k1 := gateway.RunTokenKey{ID: "k1", Key: []byte(strings.Repeat("s", gateway.MinRunTokenKey))}
	k2 := gateway.RunTokenKey{ID: "k2", Key: []byte(strings.Repeat("t", gateway.MinRunTokenKey))}
	return &gateway.RunTokenKeys{Audience: "support-eu", Keys: []gateway.RunTokenKey{k1, k2}}, k1, k2
}

// signRunToken builds a token by the construction the README documents,
// over any payload.
func signRunToken(key gateway.RunTokenKey, payload string) string {
	signed := key.ID + "." + base64.RawURLEncoding.EncodeToString([]byte(payload))
	m := hmac.New(sha256.New, key.Key)
	m.Write([]byte(gateway.RunTokenDomain + signed))
	return signed + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func TestRunTokenVerification(t *testing.T) {
	keys, k1, k2 := testKeys()
	now := time.Unix(1_900_000_000, 0)
	tok, err := gateway.MintRunToken(k1, "support-eu", "run-1", "alice", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := gateway.VerifyRunToken(keys, tok, now.Add(59*time.Minute))
	if err != nil || rt.Run != "run-1" || rt.Principal != "alice" || rt.KeyID != "k1" || !rt.Expires.Equal(now.Add(time.Hour+gateway.RunTokenSkew)) {
		t.Fatalf("verify = %+v, %v", rt, err)
	}
	// Within the skew after expiry it holds; past it, it does not.
	if _, err := gateway.VerifyRunToken(keys, tok, now.Add(time.Hour+gateway.RunTokenSkew-time.Second)); err != nil {
		t.Fatalf("within the skew: %v", err)
	}
	if _, err := gateway.VerifyRunToken(keys, signRunToken(k1, `{"aud":"support-eu","exp":1900003600,"run":"run-1","sub":"alice"}`), now); err != nil {
		t.Fatalf("a token signed by the documented construction: %v", err)
	}

	// Rotation: a token of either key verifies; once its key is removed,
	// not any more.
	tok2, err := gateway.MintRunToken(k2, "support-eu", "run-1", "alice", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gateway.VerifyRunToken(keys, tok2, now); err != nil {
		t.Fatalf("a token of the second key: %v", err)
	}
	rotated := &gateway.RunTokenKeys{Audience: "support-eu", Keys: []gateway.RunTokenKey{k2}}
	if _, err := gateway.VerifyRunToken(rotated, tok, now); !errors.Is(err, gateway.ErrRunToken) {
		t.Fatalf("a token of a removed key: %v", err)
	}

	enc := base64.RawURLEncoding
	kid, rest, _ := strings.Cut(tok, ".")
	payload, mac, _ := strings.Cut(rest, ".")
	sameKeyOtherID := gateway.RunTokenKey{ID: "k3", Key: k1.Key}
	bad := map[string]string{
		"expired":         tok,
		"forged payload":  kid + "." + enc.EncodeToString([]byte(`{"aud":"support-eu","exp":1900003600,"run":"run-1","sub":"mallory"}`)) + "." + mac,
		"another kid":     "k2." + payload + "." + mac,
		"unknown kid":     signRunToken(gateway.RunTokenKey{ID: "k9", Key: k1.Key}, `{"aud":"support-eu","exp":1900003600,"run":"run-1","sub":"alice"}`),
		"no mac":          kid + "." + payload,
		"four parts":      tok + ".x",
		"padded":          kid + "." + payload + "=." + mac,
		"oversized":       strings.Repeat("a", gateway.MaxRunTokenBytes+1),
		"empty":           "",
		"first format":    payload + "." + mac,
		"another key, k1": signRunToken(gateway.RunTokenKey{ID: "k1", Key: []byte(strings.Repeat("x", 40))}, `{"aud":"support-eu","exp":1900003600,"run":"run-1","sub":"alice"}`),
	}
	for i := 0; i <= len(tok); i++ { // one token, one string form
		for _, ins := range []string{"\r", "\n", "\r\n", " ", "=", "+", "/", "\t", "\x00"} {
			bad[fmt.Sprintf("%q inserted at %d", ins, i)] = tok[:i] + ins + tok[i:]
		}
	}
	for name, tk := range bad {
		at := now
		if name == "expired" {
			at = now.Add(time.Hour + gateway.RunTokenSkew)
		}
		if _, err := gateway.VerifyRunToken(keys, tk, at); !errors.Is(err, gateway.ErrRunToken) {
			t.Errorf("%s: %v, want ErrRunToken", name, err)
		}
	}

	// The kid is signed: under another id of the same key, the token is
	// refused.
	twoIDs := &gateway.RunTokenKeys{Audience: "support-eu", Keys: []gateway.RunTokenKey{k1, sameKeyOtherID}}
	if _, err := gateway.VerifyRunToken(twoIDs, "k3."+payload+"."+mac, now); !errors.Is(err, gateway.ErrRunToken) {
		t.Errorf("the token under another id of its key: %v", err)
	}

	// Two deployments sharing a key do not accept each other's tokens.
	other := &gateway.RunTokenKeys{Audience: "support-us", Keys: keys.Keys}
	if _, err := gateway.VerifyRunToken(other, tok, now); !errors.Is(err, gateway.ErrRunToken) || !strings.Contains(err.Error(), "audience") {
		t.Errorf("a token for another audience: %v", err)
	}

	// A correctly signed payload must be exactly the four members, by
	// their exact names, once each, each valid, and nothing after it.
	for _, p := range []string{
		`{"aud":"support-eu","exp":1900003600,"run":"run-1","sub":"alice","Sub":"bob"}`,
		`{"aud":"support-eu","exp":1900003600,"run":"run-1","Sub":"bob"}`,
		`{"aud":"support-eu","exp":1900003600,"run":"run-1","sub":"alice","sub":"bob"}`,
		`{"aud":"support-eu","exp":1900003600,"run":"run-1","sub":"alice","s\u0075b":"bob"}`,
		`{"aud":"support-eu","exp":1900003600,"run":"run-1","sub":"alice"} {}`,
		`{"aud":"support-eu","exp":1900003600,"run":"run-1","sub":"alice"}x`,
		`{"aud":"support-eu","exp":1900003600,"run":"run-1","sub":"alice","admin":true}`,
		`{"aud":"support-eu","exp":1900003600,"run":"run-1"}`,
		`{"exp":1900003600,"run":"run-1","sub":"alice"}`,
		`{"aud":"support-eu","exp":1900003600.5,"run":"run-1","sub":"alice"}`,
		`{"aud":"support-eu","exp":1.9000036e9,"run":"run-1","sub":"alice"}`,
		`{"aud":"support-eu","exp":"1900003600","run":"run-1","sub":"alice"}`,
		`{"aud":"support-eu","exp":1900003600,"run":"run 1","sub":"alice"}`,
		`{"aud":"support-eu","exp":1900003600,"run":"run-1","sub":""}`,
		`{"aud":"support-eu","exp":1900003600,"run":"run-1","sub":["alice"]}`,
		`{"aud":"support-eu","exp":2900000000,"run":"run-1","sub":"alice"}`, // far beyond MaxRunTokenTTL
		`["support-eu",1900003600,"run-1","alice"]`,
		"{\"aud\":\"support-eu\",\"exp\":1900003600,\"run\":\"run-1\",\"sub\":\"al\xffice\"}",
	} {
		if _, err := gateway.VerifyRunToken(keys, signRunToken(k1, p), now); !errors.Is(err, gateway.ErrRunToken) {
			t.Errorf("signed %s: %v, want ErrRunToken", p, err)
		}
	}
	for _, args := range []struct {
		key                      gateway.RunTokenKey
		audience, run, principal string
		ttl                      time.Duration
	}{
		{gateway.RunTokenKey{ID: "k1", Key: k1.Key[:gateway.MinRunTokenKey-1]}, "a", "run-1", "alice", time.Hour},
		{gateway.RunTokenKey{ID: "", Key: k1.Key}, "a", "run-1", "alice", time.Hour},
		{gateway.RunTokenKey{ID: "k.1", Key: k1.Key}, "a", "run-1", "alice", time.Hour},
		{k1, "", "run-1", "alice", time.Hour},
		{k1, "a", "bad run", "alice", time.Hour},
		{k1, "a", "run-1", "", time.Hour},
		{k1, "a", "run-1", "has space", time.Hour},
		{k1, "a", "run-1", "alice", 0},
		{k1, "a", "run-1", "alice", gateway.MaxRunTokenTTL + time.Second},
	} {
		if _, err := gateway.MintRunToken(args.key, args.audience, args.run, args.principal, args.ttl, now); err == nil {
			t.Errorf("MintRunToken(%q with %d bytes, %q, %q, %q, %v) succeeded", args.key.ID, len(args.key.Key), args.audience, args.run, args.principal, args.ttl)
		}
	}
}

// FuzzVerifyRunToken: any input is refused or accepted without panicking,
// in bounded time; an accepted token is of the token alphabet, names a
// valid run and principal for this audience, and stops being accepted when
// any byte of it changes or a line break is inserted anywhere.
func FuzzVerifyRunToken(f *testing.F) {
	keys, k1, k2 := testKeys()
	now := time.Unix(1_900_000_000, 0)
	for _, k := range []gateway.RunTokenKey{k1, k2} {
		tok, err := gateway.MintRunToken(k, "support-eu", "run-1", "alice", time.Hour, now)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(tok)
		f.Add(tok + "\n")
		f.Add(strings.Replace(tok, ".", ".\r\n", 1))
	}
	for _, p := range []string{`{"aud":"support-eu","exp":1900003600,"run":"run-1","sub":"alice","Sub":"bob"}`,
		`{"aud":"support-eu","exp":1900003600,"run":"run-1","sub":"alice"} `, `{"aud":"support-us","exp":1900003600,"run":"run-1","sub":"alice"}`} {
		f.Add(signRunToken(k1, p))
	}
	for _, s := range []string{"", ".", "..", "a.b", "k1.a.b", strings.Repeat("A", 100) + "." + strings.Repeat("B", 43)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rt, err := gateway.VerifyRunToken(keys, s, now)
		if err != nil {
			if !errors.Is(err, gateway.ErrRunToken) {
				t.Fatalf("refusal %v does not wrap ErrRunToken", err)
			}
			return
		}
		if rt.Run == "" || rt.Principal == "" || (rt.KeyID != "k1" && rt.KeyID != "k2") || !now.Before(rt.Expires) || strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.") != "" {
			t.Fatalf("accepted %q as %+v", s, rt)
		}
		for i := range len(s) {
			b := []byte(s)
			b[i] ^= 0x01
			if _, err := gateway.VerifyRunToken(keys, string(b), now); err == nil {
				t.Fatalf("accepted %q and also %q", s, b)
			}
			v := s[:i] + "\r\n" + s[i:]
			if _, err := gateway.VerifyRunToken(keys, v, now); err == nil {
				t.Fatalf("accepted %q and also %q", s, v)
			}
		}
	})
}
