package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// MaxAccessTokenBytes bounds an access token; a longer one is refused
// unread.
const MaxAccessTokenBytes = 8 << 10

// Bounds of the parts of an access token.
const (
	maxTokenScopes    = 64
	maxTokenAudiences = 16
	maxClaimsDepth    = 16
)

// tokenRefusal is why a bearer token was refused: a fixed text, sent as
// the error_description of the 401's WWW-Authenticate (RFC 6750).
type tokenRefusal string

func (r tokenRefusal) Error() string { return string(r) }

// The refusals of a bearer token.
const (
	refusedMalformed   tokenRefusal = "the token is not a JWT access token this server accepts"
	refusedUnknown     tokenRefusal = "the token is not known to this server"
	refusedAlgorithm   tokenRefusal = "the token's signing algorithm is not accepted"
	refusedKey         tokenRefusal = "the token names no signing key of the issuer"
	refusedSignature   tokenRefusal = "the token's signature does not verify"
	refusedIssuer      tokenRefusal = "the token is from another issuer"
	refusedAudience    tokenRefusal = "the token is not for this resource"
	refusedExpired     tokenRefusal = "the token has expired"
	refusedNotYetValid tokenRefusal = "the token is not valid yet"
	refusedClaims      tokenRefusal = "the token's claims are malformed"
	refusedSubject     tokenRefusal = "the token names no usable subject"
)

// errKeysUnavailable: the issuer's keys have never been fetched, so no
// token can be verified; the server, not the token, is at fault.
var errKeysUnavailable = errors.New("gateway: the authorization server's keys are unavailable")

// errBadAuthorization: an Authorization header that is not one bearer
// credential (RFC 6750 invalid_request).
var errBadAuthorization = errors.New("gateway: malformed Authorization header")

// bearerToken returns the bearer token of a request's Authorization header;
// ok is false when the request has none (no header, or another scheme).
// Several Authorization headers, or a bearer credential that is not one
// b64token (RFC 6750 section 2.1) of at most MaxAccessTokenBytes, are
// errBadAuthorization. A token is read from the header only, never from
// the query or the body.
func bearerToken(h http.Header) (tok string, ok bool, err error) {
	vs := h.Values("Authorization")
	switch {
	case len(vs) == 0:
		return "", false, nil
	case len(vs) > 1:
		return "", false, errBadAuthorization
	}
	scheme, rest, _ := strings.Cut(vs[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", false, nil
	}
	rest = strings.TrimLeft(rest, " ")
	if !b64token(rest) || len(rest) > MaxAccessTokenBytes {
		return "", false, errBadAuthorization
	}
	return rest, true, nil
}

// b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func b64token(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}

// jwsShape reports whether tok looks like a compact JWS: three base64url
// segments (no padding), the first two not empty.
func jwsShape(tok string) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return false
	}
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			c := p[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// keyFinder returns the issuer's key of id kid (any, when kid is "") fit
// for alg.
type keyFinder interface {
	key(ctx context.Context, kid, alg string) (*jose.JSONWebKey, error)
}

// accessTokens verifies JWT access tokens of one issuer for one resource.
type accessTokens struct {
	issuer, resource string
	algs             []string
	skew             time.Duration
	subjectClaim     string
	keys             keyFinder
	now              func() time.Time
}

// verify checks a JWT access token (RFC 9068): its header (an accepted
// algorithm; no crit), its signature by one of the issuer's keys, and its
// claims (issuer, audience, exp, nbf, iat within the skew, a subject,
// scopes), each decoded as strict JSON. It returns the token's principal,
// scopes and the end of its validity (exp plus the skew), or a
// tokenRefusal, or errKeysUnavailable.
func (a *accessTokens) verify(ctx context.Context, tok string) (*auth.TokenInfo, error) {
	if len(tok) > MaxAccessTokenBytes || !jwsShape(tok) {
		return nil, refusedMalformed
	}
	segs := strings.SplitN(tok, ".", 3)
	var hdr struct {
		Alg  string          `json:"alg"`
		Kid  string          `json:"kid"`
		Typ  string          `json:"typ"`
		Crit json.RawMessage `json:"crit"`
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(segs[0])
	if err != nil || strictjson.Check(raw, 4) != nil || json.Unmarshal(raw, &hdr) != nil {
		return nil, refusedMalformed
	}
	if !slices.Contains(a.algs, hdr.Alg) {
		return nil, refusedAlgorithm // "none", HMAC, or one not configured
	}
	if hdr.Crit != nil || !accessTokenType(hdr.Typ) {
		return nil, refusedMalformed
	}
	key, err := a.keys.key(ctx, hdr.Kid, hdr.Alg)
	if err != nil {
		return nil, err
	}
	jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(hdr.Alg)})
	if err != nil {
		return nil, refusedMalformed
	}
	payload, err := jws.Verify(key.Key)
	if err != nil {
		return nil, refusedSignature
	}
	return a.claims(payload)
}

// accessTokenType: no typ, or one an access token may carry (RFC 9068
// at+jwt, or plain JWT as many issuers write).
func accessTokenType(typ string) bool {
	switch strings.ToLower(typ) {
	case "", "jwt", "at+jwt", "application/at+jwt":
		return true
	}
	return false
}

// claims checks a verified token's claims.
func (a *accessTokens) claims(payload []byte) (*auth.TokenInfo, error) {
	if strictjson.Check(payload, maxClaimsDepth) != nil {
		return nil, refusedClaims
	}
	var c map[string]json.RawMessage
	if json.Unmarshal(payload, &c) != nil || c == nil {
		return nil, refusedClaims
	}
	var iss string
	if json.Unmarshal(c["iss"], &iss) != nil || iss != a.issuer {
		return nil, refusedIssuer
	}
	if !a.forMe(c["aud"]) {
		return nil, refusedAudience
	}
	now := a.now()
	exp, ok := numericDate(c["exp"])
	if !ok {
		return nil, refusedClaims
	}
	end := exp.Add(a.skew)
	if !now.Before(end) {
		return nil, refusedExpired
	}
	if raw, present := c["nbf"]; present {
		nbf, ok := numericDate(raw)
		if !ok || nbf.After(exp) {
			return nil, refusedClaims
		}
		if nbf.After(now.Add(a.skew)) {
			return nil, refusedNotYetValid
		}
	}
	if raw, present := c["iat"]; present {
		iat, ok := numericDate(raw)
		if !ok || iat.After(exp) || iat.After(now.Add(a.skew)) {
			return nil, refusedClaims
		}
	}
	var sub string
	if raw, present := c[a.subjectClaim]; !present || json.Unmarshal(raw, &sub) != nil || !subject(sub) {
		return nil, refusedSubject
	}
	scopes, ok := tokenScopes(c["scope"])
	if !ok {
		return nil, refusedClaims
	}
	return &auth.TokenInfo{UserID: sub, Scopes: scopes, Expiration: end, Extra: map[string]any{oauthIssuerKey: iss}}, nil
}

// forMe reports whether the aud claim (a string or an array of strings)
// names the resource.
func (a *accessTokens) forMe(raw json.RawMessage) bool {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one == a.resource
	}
	var many []string
	if json.Unmarshal(raw, &many) != nil || len(many) > maxTokenAudiences {
		return false
	}
	return slices.Contains(many, a.resource)
}

// numericDate decodes a NumericDate (seconds since the epoch, a JSON
// number), refusing what is not one: a string, a negative or non-finite
// number, or one past the year 5000.
func numericDate(raw json.RawMessage) (time.Time, bool) {
	var f float64
	if len(raw) == 0 || raw[0] < '0' && raw[0] != '-' || raw[0] > '9' || json.Unmarshal(raw, &f) != nil || math.IsNaN(f) || f < 0 || f > 95617584000 {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}

// tokenScopes decodes the scope claim: absent, or a space-separated string
// of scope-tokens (RFC 9068, RFC 6749 section 3.3).
func tokenScopes(raw json.RawMessage) ([]string, bool) {
	if raw == nil {
		return nil, true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil, false
	}
	var out []string
	for _, sc := range strings.Split(s, " ") {
		switch {
		case sc == "":
			continue
		case !scopeToken(sc) || len(out) == maxTokenScopes:
			return nil, false
		case !slices.Contains(out, sc):
			out = append(out, sc)
		}
	}
	return out, true
}
