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
	"strings"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
)

// A run token is how a host that mints run ids for its agents hands the
// gateway a run a principal may use: base64url(payload) "." base64url(mac),
// unpadded, where payload is the JSON object {"run":…,"sub":…,"exp":…}
// (run id, principal, expiry in Unix seconds) and mac is the HMAC-SHA256,
// under a key only the host and the gateway hold, of RunTokenDomain and the
// payload's bytes. The gateway reads it from the HTTP header RunTokenHeader
// or from _meta under MetaRunToken.
const (
	MetaRunToken   = "io.github.toolcanon/runToken"
	RunTokenHeader = "Toolcanon-Run-Token"
	RunTokenDomain = "toolcanon run token v1\x00"
)

// Bounds of run tokens and their keys.
const (
	MaxRunTokenBytes = 2048               // a longer token is refused unread
	MinRunTokenKey   = 32                 // bytes of key at least
	maxRunTokenKey   = 4 << 10            // what a key file may hold
	MaxRunTokenTTL   = 7 * 24 * time.Hour // a token may not live longer
	RunTokenSkew     = 30 * time.Second   // clock difference tolerated between host and gateway
)

// ErrRunToken is wrapped by every refusal of a run token: malformed, over
// MaxRunTokenBytes, signed with another key, expired, or for a principal
// other than the authenticated one.
var ErrRunToken = errors.New("gateway: run token refused")

// RunToken is what a valid run token says.
type RunToken struct {
	Run       string    // the run id
	Principal string    // the principal the run belongs to
	Expires   time.Time // the token is refused from this instant (plus RunTokenSkew)
}

type runTokenPayload struct {
	Run string `json:"run"`
	Sub string `json:"sub"`
	Exp int64  `json:"exp"`
}

// MintRunToken signs a token for run and principal that expires after ttl
// (1s to MaxRunTokenTTL) from now. key must have at least MinRunTokenKey
// bytes.
func MintRunToken(key []byte, run, principal string, ttl time.Duration, now time.Time) (string, error) {
	if len(key) < MinRunTokenKey {
		return "", canonical.Errorf(canonical.CodeInvalidArgument, "run token key must have at least %d bytes", MinRunTokenKey)
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
	payload, err := json.Marshal(runTokenPayload{Run: run, Sub: principal, Exp: now.Add(ttl).Unix()})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(runTokenMAC(key, payload)), nil
}

func runTokenMAC(key, payload []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(RunTokenDomain))
	m.Write(payload)
	return m.Sum(nil)
}

// VerifyRunToken checks a token's size, form and MAC (in constant time)
// before it reads the payload, then its expiry against now with
// RunTokenSkew of tolerance. Every refusal wraps ErrRunToken.
func VerifyRunToken(key []byte, token string, now time.Time) (RunToken, error) {
	refuse := func(why string) (RunToken, error) { return RunToken{}, fmt.Errorf("%w: %s", ErrRunToken, why) }
	if len(token) > MaxRunTokenBytes {
		return refuse("over the size bound")
	}
	p64, m64, ok := strings.Cut(token, ".")
	if !ok || strings.Contains(m64, ".") {
		return refuse("not payload.mac")
	}
	enc := base64.RawURLEncoding.Strict()
	payload, err1 := enc.DecodeString(p64)
	mac, err2 := enc.DecodeString(m64)
	if err1 != nil || err2 != nil || len(mac) != sha256.Size {
		return refuse("not base64url")
	}
	if len(key) < MinRunTokenKey || !hmac.Equal(mac, runTokenMAC(key, payload)) {
		return refuse("bad signature")
	}
	var p runTokenPayload
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || dec.More() {
		return refuse("malformed payload")
	}
	if canonical.ValidateRunID(p.Run) != nil || !subject(p.Sub) || p.Exp <= 0 {
		return refuse("malformed payload")
	}
	exp := time.Unix(p.Exp, 0)
	switch {
	case !now.Before(exp.Add(RunTokenSkew)):
		return refuse("expired")
	case exp.Sub(now) > MaxRunTokenTTL+RunTokenSkew:
		return refuse("expiry too far ahead")
	}
	return RunToken{Run: p.Run, Principal: p.Sub, Expires: exp}, nil
}

// RunTokenConfig says where the gateway's run token key is and whether every
// call must carry a token.
type RunTokenConfig struct {
	KeyFile  string // file holding the key (a trailing newline is dropped); relative to the configuration's directory
	KeyEnv   string // environment variable holding the key, when KeyFile is empty
	Required bool   // refuse every call without a valid token
}

// Key reads the configured key: at least MinRunTokenKey bytes.
func (rc *RunTokenConfig) Key() ([]byte, error) {
	var key []byte
	switch {
	case rc.KeyFile != "":
		f, err := os.Open(rc.KeyFile)
		if err != nil {
			return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: run token key file: %v", err)
		}
		defer f.Close()
		key, err = io.ReadAll(io.LimitReader(f, maxRunTokenKey+1))
		if err != nil || len(key) > maxRunTokenKey {
			return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: run token key file is unreadable or over %d bytes", maxRunTokenKey)
		}
		key = bytes.TrimSuffix(bytes.TrimSuffix(key, []byte("\n")), []byte("\r"))
	case rc.KeyEnv != "":
		key = []byte(os.Getenv(rc.KeyEnv))
	}
	if len(key) < MinRunTokenKey {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: the run token key must have at least %d bytes", MinRunTokenKey)
	}
	return key, nil
}

// runToken parses identity.run_token.
func (c *cfgParser) runToken(n *jnode, ptr string) (*RunTokenConfig, error) {
	const fix = `use {"key_file": "run-token.key"} or {"key_env": "TOOLCANON_RUN_TOKEN_KEY"}, and "required": true to refuse calls without a token`
	if err := c.obj(n, ptr, "key_file", "key_env", "required"); err != nil {
		return nil, err
	}
	rc := &RunTokenConfig{}
	var err error
	if rc.KeyFile, err = c.optStr(n, ptr, "key_file", fix, func(s string) bool { return s != "" && len(s) <= 4096 }); err != nil {
		return nil, err
	}
	if rc.KeyEnv, err = c.optStr(n, ptr, "key_env", fix, envName); err != nil {
		return nil, err
	}
	if (rc.KeyFile == "") == (rc.KeyEnv == "") {
		return nil, c.fail(n, ptr, fix, "name exactly one of key_file and key_env")
	}
	if rc.KeyFile != "" && !filepath.IsAbs(rc.KeyFile) {
		dir, err := filepath.Abs(filepath.Dir(c.file))
		if err != nil {
			return nil, c.fail(n, ptr+"/key_file", fix, "cannot resolve the configuration's directory: %v", err)
		}
		rc.KeyFile = filepath.Join(dir, rc.KeyFile)
	}
	if v := n.member("required"); v != nil {
		if v.kind != jBool {
			return nil, c.fail(v, ptr+"/required", fix, "expected true or false, found %s", v.kind)
		}
		rc.Required = v.str == "true"
	}
	return rc, nil
}
