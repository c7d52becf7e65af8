package gateway

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// A run token is how a host that mints run ids for its agents hands the
// gateway a run a principal may use:
//
//	kid "." base64url(payload) "." base64url(mac)
//
// unpadded, where kid names the key (1-64 of [A-Za-z0-9_-]), payload is the
// JSON object {"aud":…,"exp":…,"run":…,"sub":…} (the gateway's audience,
// the expiry in Unix seconds, the run id, the principal; exactly these
// members) and mac is the HMAC-SHA256, under the key kid names, of
// RunTokenDomain followed by the token's first two parts as they stand
// (kid "." base64url(payload)). The gateway reads it from the HTTP header
// RunTokenHeader or from _meta under MetaRunToken.
//
// Tokens of the first format (base64url(payload) "." base64url(mac), with
// neither audience nor key id) are refused: two deployments sharing a key
// would accept each other's.
const (
	MetaRunToken   = "io.github.toolcanon/runToken"
	RunTokenHeader = "Toolcanon-Run-Token"
	RunTokenDomain = "toolcanon run token v2\x00"
)

// Bounds of run tokens and their keys.
const (
	MaxRunTokenBytes = 2048               // a longer token is refused unread
	MinRunTokenKey   = 32                 // bytes of key at least
	maxRunTokenKey   = 4 << 10            // what a key file may hold
	MaxRunTokenTTL   = 7 * 24 * time.Hour // a token may not live longer
	RunTokenSkew     = 30 * time.Second   // clock difference tolerated between host and gateway
	maxRunTokenKeyID = 64
	maxRunTokenKeys  = 16
)

// ErrRunToken is wrapped by every refusal of a run token: malformed, over
// MaxRunTokenBytes, of the first format, signed with an unknown or another
// key, for another audience, expired, or for a principal other than the
// authenticated one.
var ErrRunToken = errors.New("gateway: run token refused")

// RunToken is what a valid run token says.
type RunToken struct {
	Run       string    // the run id
	Principal string    // the principal the run belongs to
	KeyID     string    // the key it was signed with
	Expires   time.Time // the gateway refuses it from this instant: its exp plus RunTokenSkew
}

// RunTokenKey is one key of run tokens, and the id tokens name it by.
type RunTokenKey struct {
	ID  string // 1-64 of [A-Za-z0-9_-]
	Key []byte // at least MinRunTokenKey bytes
}

// RunTokenKeys verify the run tokens of one gateway: tokens for Audience,
// signed with one of Keys. Several keys let a key rotate: tokens signed
// with the old one verify until it is removed.
type RunTokenKeys struct {
	Audience string        // this gateway's: 1-256 printable ASCII characters without spaces
	Keys     []RunTokenKey // at most 16, ids distinct
}

type runTokenPayload struct {
	Aud string `json:"aud"`
	Exp int64  `json:"exp"`
	Run string `json:"run"`
	Sub string `json:"sub"`
}

// MintRunToken signs, with key, a token of audience for run and principal
// that expires after ttl (1s to MaxRunTokenTTL) from now.
func MintRunToken(key RunTokenKey, audience, run, principal string, ttl time.Duration, now time.Time) (string, error) {
	if err := key.check(); err != nil {
		return "", err
	}
	if !subject(audience) {
		return "", canonical.Errorf(canonical.CodeInvalidArgument, "audience must be 1-256 printable ASCII characters without spaces")
	}
	if err := canonical.ValidateRunID(run); err != nil {
		return "", err
	}
	if !subject(principal) {
		return "", canonical.Errorf(canonical.CodeInvalidArgument, "principal must be 1-256 printable ASCII characters without spaces")
	}
	if ttl < time.Second || ttl > MaxRunTokenTTL {
		return "", canonical.Errorf(canonical.CodeInvalidArgument, "run token TTL must be in 1s..%v", MaxRunTokenTTL)
	}
	payload, err := json.Marshal(runTokenPayload{Aud: audience, Exp: now.Add(ttl).Unix(), Run: run, Sub: principal})
	if err != nil {
		return "", err
	}
	signed := key.ID + "." + base64.RawURLEncoding.EncodeToString(payload)
	return signed + "." + base64.RawURLEncoding.EncodeToString(runTokenMAC(key.Key, signed)), nil
}

func runTokenMAC(key []byte, signed string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(RunTokenDomain))
	m.Write([]byte(signed))
	return m.Sum(nil)
}

// check says what is wrong with k, if anything.
func (k RunTokenKey) check() error {
	switch {
	case !keyID(k.ID):
		return canonical.Errorf(canonical.CodeInvalidArgument, "run token key id %q is not 1-%d of [A-Za-z0-9_-]", k.ID, maxRunTokenKeyID)
	case len(k.Key) < MinRunTokenKey:
		return canonical.Errorf(canonical.CodeInvalidArgument, "run token key %q must have at least %d bytes", k.ID, MinRunTokenKey)
	}
	return nil
}

// VerifyRunToken checks a token's size and bytes (each of the token
// alphabet: base64url and '.'), its form, and its MAC under the key its id
// names (in constant time) before it reads the payload as strict JSON;
// then the audience, and the expiry against now with RunTokenSkew of
// tolerance. Every refusal wraps ErrRunToken.
func VerifyRunToken(keys *RunTokenKeys, token string, now time.Time) (RunToken, error) {
	refuse := func(why string) (RunToken, error) { return RunToken{}, fmt.Errorf("%w: %s", ErrRunToken, why) }
	if len(token) > MaxRunTokenBytes {
		return refuse("over the size bound")
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; !(keyIDByte(c) || c == '.') {
			return refuse("a byte outside the token alphabet")
		}
	}
	parts := strings.Split(token, ".")
	switch {
	case len(parts) == 2:
		return refuse("a token of the first format, without audience or key id: mint a new one")
	case len(parts) != 3 || !keyID(parts[0]):
		return refuse("not kid.payload.mac")
	}
	var key []byte
	if keys != nil {
		for _, k := range keys.Keys {
			if k.ID == parts[0] {
				key = k.Key
			}
		}
	}
	enc := base64.RawURLEncoding.Strict()
	payload, err1 := enc.DecodeString(parts[1])
	mac, err2 := enc.DecodeString(parts[2])
	switch {
	case err1 != nil || err2 != nil || len(mac) != sha256.Size:
		return refuse("not base64url")
	case len(key) < MinRunTokenKey:
		return refuse("signed with an unknown key")
	case !hmac.Equal(mac, runTokenMAC(key, parts[0]+"."+parts[1])):
		return refuse("bad signature")
	}
	p, ok := parseRunTokenPayload(payload)
	if !ok || canonical.ValidateRunID(p.Run) != nil || !subject(p.Sub) || p.Exp <= 0 {
		return refuse("malformed payload")
	}
	if p.Aud != keys.Audience {
		return refuse("for another audience")
	}
	exp := time.Unix(p.Exp, 0)
	switch {
	case !now.Before(exp.Add(RunTokenSkew)):
		return refuse("expired")
	case exp.Sub(now) > MaxRunTokenTTL+RunTokenSkew:
		return refuse("expiry too far ahead")
	}
	return RunToken{Run: p.Run, Principal: p.Sub, KeyID: parts[0], Expires: exp.Add(RunTokenSkew)}, nil
}

// parseRunTokenPayload reads a payload as strict JSON (no repeated member,
// no trailing bytes): an object of exactly the four members, by their exact
// names, aud, run and sub strings and exp an integer.
func parseRunTokenPayload(b []byte) (p runTokenPayload, ok bool) {
	seen, bad := 0, false
	str := func(v []byte, into *string) {
		s, isStr := jsonString(v)
		*into, bad = s, bad || !isStr
	}
	walk := strictjson.Walk{Top: func(name []byte, start, end int) {
		v := b[start:end]
		switch string(name) {
		case "aud":
			str(v, &p.Aud)
		case "run":
			str(v, &p.Run)
		case "sub":
			str(v, &p.Sub)
		case "exp":
			n, err := strconv.ParseInt(string(v), 10, 64)
			p.Exp, bad = n, bad || err != nil
		default:
			bad = true
		}
		seen++
	}}
	if strictjson.CheckWalk(b, 3, &walk) != nil || bad || seen != 4 || b[0] != '{' {
		return runTokenPayload{}, false
	}
	return p, true
}

func keyID(s string) bool {
	return len(s) > 0 && len(s) <= maxRunTokenKeyID && base64URLOnly(s)
}

// keyIDByte reports whether c is of base64url's alphabet, which key ids
// share.
func keyIDByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// base64URLOnly reports whether every byte of s is of the base64url
// alphabet (keyIDByte).
func base64URLOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if !keyIDByte(s[i]) {
			return false
		}
	}
	return true
}

// RunTokenConfig is identity.run_token: this gateway's audience, the keys
// tokens may be signed with, the one new tokens are, and whether every call
// must carry a token.
type RunTokenConfig struct {
	Audience string
	Keys     []RunTokenKeySource
	Mint     string // id of the key toolcanon run-token signs with
	Required bool   // refuse every call without a valid token
}

// RunTokenKeySource is where one key is.
type RunTokenKeySource struct {
	ID      string
	KeyFile string // file holding the key (a trailing newline is dropped); relative to the configuration's directory
	KeyEnv  string // environment variable holding the key, when KeyFile is empty
}

// Verifier reads every configured key.
func (rc *RunTokenConfig) Verifier() (*RunTokenKeys, error) {
	keys := &RunTokenKeys{Audience: rc.Audience}
	for _, src := range rc.Keys {
		k, err := src.Read()
		if err != nil {
			return nil, err
		}
		keys.Keys = append(keys.Keys, k)
	}
	return keys, nil
}

// MintKey reads the key new tokens are signed with.
func (rc *RunTokenConfig) MintKey() (RunTokenKey, error) {
	for _, src := range rc.Keys {
		if src.ID == rc.Mint {
			return src.Read()
		}
	}
	return RunTokenKey{}, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: no run token key has the id %q", rc.Mint)
}

// Read reads the key: at least MinRunTokenKey bytes.
func (src RunTokenKeySource) Read() (RunTokenKey, error) {
	var key []byte
	switch {
	case src.KeyFile != "":
		f, err := os.Open(src.KeyFile)
		if err != nil {
			return RunTokenKey{}, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: run token key file: %v", err)
		}
		defer f.Close()
		key, err = io.ReadAll(io.LimitReader(f, maxRunTokenKey+1))
		if err != nil || len(key) > maxRunTokenKey {
			return RunTokenKey{}, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: run token key file is unreadable or over %d bytes", maxRunTokenKey)
		}
		key = bytes.TrimSuffix(bytes.TrimSuffix(key, []byte("\n")), []byte("\r"))
	case src.KeyEnv != "":
		key = []byte(os.Getenv(src.KeyEnv))
	}
	k := RunTokenKey{ID: src.ID, Key: key}
	if err := k.check(); err != nil {
		return RunTokenKey{}, err
	}
	return k, nil
}

// runToken parses identity.run_token.
func (c *cfgParser) runToken(n *jnode, ptr string) (*RunTokenConfig, error) {
	const fix = `use {"audience": "<this deployment>", "keys": [{"id": "k1", "key_file": "run-token.key"}], "required": true}: ` +
		`a key is a key_file or a key_env; with several keys, "mint" names the one new tokens are signed with`
	if n.kind == jObject && (n.member("key_file") != nil || n.member("key_env") != nil) {
		return nil, c.fail(n, ptr, fix, "a run_token of the first format: tokens now name this gateway's audience and their key's id; mint new ones with toolcanon run-token")
	}
	if err := c.obj(n, ptr, "audience", "keys", "mint", "required"); err != nil {
		return nil, err
	}
	rc := &RunTokenConfig{}
	if _, err := c.required(n, ptr, "audience", fix); err != nil {
		return nil, err
	}
	var err error
	if rc.Audience, err = c.optStr(n, ptr, "audience", fix, subject); err != nil {
		return nil, err
	}
	keys, err := c.required(n, ptr, "keys", fix)
	if err != nil {
		return nil, err
	}
	if keys.kind != jArray || len(keys.elems) == 0 || len(keys.elems) > maxRunTokenKeys {
		return nil, c.fail(keys, ptr+"/keys", fix, "expected an array of 1 to %d keys", maxRunTokenKeys)
	}
	for i, e := range keys.elems {
		p := ptr + "/keys/" + strconv.Itoa(i)
		src, err := c.runTokenKey(e, p, fix)
		if err != nil {
			return nil, err
		}
		for j, prev := range rc.Keys {
			if prev.ID == src.ID {
				return nil, c.fail(e, p+"/id", "give each key its own id", "the id of %s/keys/%d", ptr, j)
			}
		}
		rc.Keys = append(rc.Keys, src)
	}
	if rc.Mint, err = c.optStr(n, ptr, "mint", fix, keyID); err != nil {
		return nil, err
	}
	switch {
	case rc.Mint == "" && len(rc.Keys) == 1:
		rc.Mint = rc.Keys[0].ID
	case rc.Mint == "":
		return nil, c.fail(n, ptr, fix, `with several keys, "mint" names the one new tokens are signed with`)
	case !slices.ContainsFunc(rc.Keys, func(k RunTokenKeySource) bool { return k.ID == rc.Mint }):
		return nil, c.fail(n.member("mint"), ptr+"/mint", fix, "no key has the id %q", rc.Mint)
	}
	if v := n.member("required"); v != nil {
		if v.kind != jBool {
			return nil, c.fail(v, ptr+"/required", fix, "expected true or false, found %s", v.kind)
		}
		rc.Required = v.str == "true"
	}
	return rc, nil
}

// runTokenKey parses one key of identity.run_token.keys.
func (c *cfgParser) runTokenKey(n *jnode, ptr, fix string) (RunTokenKeySource, error) {
	var src RunTokenKeySource
	if err := c.obj(n, ptr, "id", "key_file", "key_env"); err != nil {
		return src, err
	}
	if _, err := c.required(n, ptr, "id", fix); err != nil {
		return src, err
	}
	var err error
	if src.ID, err = c.optStr(n, ptr, "id", fix, keyID); err != nil {
		return src, err
	}
	if src.KeyFile, err = c.optStr(n, ptr, "key_file", fix, func(s string) bool { return s != "" && len(s) <= 4096 }); err != nil {
		return src, err
	}
	if src.KeyEnv, err = c.optStr(n, ptr, "key_env", fix, envName); err != nil {
		return src, err
	}
	if (src.KeyFile == "") == (src.KeyEnv == "") {
		return src, c.fail(n, ptr, fix, "name exactly one of key_file and key_env")
	}
	if src.KeyFile != "" && !filepath.IsAbs(src.KeyFile) {
		dir, err := filepath.Abs(filepath.Dir(c.file))
		if err != nil {
			return src, c.fail(n, ptr+"/key_file", fix, "cannot resolve the configuration's directory: %v", err)
		}
		src.KeyFile = filepath.Join(dir, src.KeyFile)
	}
	return src, nil
}
