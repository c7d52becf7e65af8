package redisstore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/toolcanon/toolcanon/canonical"
)

// A record is one HASH, laid out so that Redis holds little beyond the
// payload bytes (the scripts in package lua write it; this file reads it):
//
//	meta        <status> <evidence> id=<tag> [error=<code>] tool=<tool> owner=<owner>
//	            created=<ms> updated=<ms> [lease=<ms>] sizes=<request>,<raw>,<result>
//	            request_sha256=<digest> [completion=<digest>] [overflow=1] [gen=<generation>]
//	request     the request's first part; request.2 ... request.8 the others, if any
//	raw         the raw response's parts, likewise (absent while PROJECTING)
//	result      the agent result's parts, likewise (absent unless READY)
//
// The run_id and tool_call_id are the key's; id=<tag> (identityTag) binds
// the record to them, so that a record copied under another run's or call's
// key is read with empty ids, which progress reports as CROSS_RUN. A payload is cut into parts
// where an allocator size class ends, so that a payload of 64 KiB does not
// take an 80 KiB allocation; its bytes are the concatenation of its parts,
// whose lengths the meta line's sizes add up to. The owner, when it is the
// 32 hex digits NewOwner makes, and the digests are stored in base64url:
// an owner so stored starts with "~", which no owner can.
const (
	metaField = "meta"
	maxParts  = 8 // parts of one payload, at most
)

// partFields returns the fields that hold the parts of the payload name.
func partFields(name string) []string {
	f := make([]string, maxParts)
	f[0] = name
	for i := 2; i <= maxParts; i++ {
		f[i-1] = name + "." + strconv.Itoa(i)
	}
	return f
}

var (
	requestParts = partFields("request")
	rawParts     = partFields("raw")
	resultParts  = partFields("result")
)

// ownerMark starts an owner stored in base64url.
const ownerMark = "~"

// storeOwner returns the form of owner the record keeps: 16 bytes in
// base64url behind ownerMark for the 32 lowercase hex digits of NewOwner,
// else the owner itself.
func storeOwner(owner string) string {
	if b, ok := lowerHex(owner, 16); ok {
		return ownerMark + base64.RawURLEncoding.EncodeToString(b)
	}
	return owner
}

// loadOwner undoes storeOwner.
func loadOwner(s string) string {
	if b64, ok := strings.CutPrefix(s, ownerMark); ok {
		if b, err := base64.RawURLEncoding.DecodeString(b64); err == nil {
			return hex.EncodeToString(b)
		}
	}
	return s
}

// storeDigest returns a hex SHA-256 as the record keeps it: base64url.
func storeDigest(d string) string {
	if b, ok := lowerHex(d, 32); ok {
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return d
}

// loadDigest undoes storeDigest.
func loadDigest(s string) string {
	if len(s) == base64.RawURLEncoding.EncodedLen(32) {
		if b, err := base64.RawURLEncoding.DecodeString(s); err == nil {
			return hex.EncodeToString(b)
		}
	}
	return s
}

// completionDigest is what the record keeps of a completion's digest to
// recognise its retry: the first 8 bytes, in base64url (11 characters). It
// only tells one completion of the same owner's call from another, which 64
// bits do; the meta line stays within one allocator size class.
func completionDigest(c *canonical.Completion) string {
	b, _ := hex.DecodeString(c.Digest())
	return base64.RawURLEncoding.EncodeToString(b[:8])
}

// identityTag is what a record keeps of its run_id and tool_call_id: the
// first 6 bytes of SHA-256(run_id NUL tool_call_id), in base64url (8
// characters): it tells a record copied under another key, not an attacker
// who can write to Redis. Ids cannot hold NUL, so distinct pairs hash distinct inputs.
func identityTag(runID, toolCallID string) string {
	h := sha256.New()
	h.Write([]byte(runID))
	h.Write([]byte{0})
	h.Write([]byte(toolCallID))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:6])
}

// newGeneration returns a run generation for a Begin to offer: 8 random
// bytes in base64url (11 characters). Only the Begin that makes a run's
// state uses it; each record keeps its run's, so that a record outliving
// its run's state is told from one counted in a new state.
func newGeneration() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// lowerHex decodes s when it is exactly n bytes in lowercase hex, the form
// that encodes back to s.
func lowerHex(s string, n int) ([]byte, bool) {
	if len(s) != 2*n || strings.ToLower(s) != s {
		return nil, false
	}
	b, err := hex.DecodeString(s)
	return b, err == nil
}

// meta is a record's meta line, decoded.
type meta struct {
	status, evidence, idTag, errCode, tool, owner, requestDigest string
	created, updated, lease                                      int64
	sizes                                                        [3]int64 // request, raw, result
}

// parseMeta decodes a meta line; ok is false when the line is not one. It
// walks the line's words once, allocating nothing but the owner and digest
// it decodes.
func parseMeta(line string) (m meta, ok bool) {
	n, sizes := 0, ""
	for w := range strings.FieldsSeq(line) {
		n++
		switch n {
		case 1:
			m.status = w
			continue
		case 2:
			m.evidence = w
			continue
		}
		k, v, found := strings.Cut(w, "=")
		if !found {
			continue
		}
		switch k {
		case "id":
			m.idTag = v
		case "error":
			m.errCode = v
		case "tool":
			m.tool = v
		case "owner":
			m.owner = loadOwner(v)
		case "created":
			m.created = atoi(v)
		case "updated":
			m.updated = atoi(v)
		case "lease":
			m.lease = atoi(v)
		case "sizes":
			sizes = v
		case "request_sha256":
			m.requestDigest = loadDigest(v)
		}
	}
	if n < 2 {
		return m, false
	}
	for i := range m.sizes {
		p, rest, found := strings.Cut(sizes, ",")
		if found != (i < len(m.sizes)-1) {
			return m, false // not three numbers
		}
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < 0 {
			return m, false
		}
		m.sizes[i], sizes = v, rest
	}
	return m, true
}
