package record_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/internal/record"
	"github.com/toolcanon/toolcanon/lua"
)

// The scripts' constants are this package's: the committed lua/format.lib
// is what LuaLib writes, so a change to one side alone fails here.
func TestFormatLibIsGenerated(t *testing.T) {
	got, err := lua.FS.ReadFile("format.lib")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != record.LuaLib() {
		t.Fatal("lua/format.lib differs from record.LuaLib(): run 'make generate' and commit both")
	}
	for _, f := range record.Fields {
		want := "local H_" + strings.ToUpper(f.Name) + ", H_" + strings.ToUpper(f.Name) + "_END = "
		if !strings.Contains(string(got), want) {
			t.Errorf("format.lib has no %q", want)
		}
	}
}

// The fields tile the fixed part of the header, in order, without a gap.
func TestFieldsTile(t *testing.T) {
	off := 0
	for _, f := range record.Fields {
		if f.Off != off || f.Len < 1 {
			t.Fatalf("field %s at %d (%d bytes), want it at %d", f.Name, f.Off, f.Len, off)
		}
		off += f.Len
	}
	if off != record.OffOwner {
		t.Fatalf("the fields end at %d, the owner starts at %d", off, record.OffOwner)
	}
}

func sample() record.Header {
	return record.Header{Status: "READY", Evidence: "EVIDENCE_FOUND", RawLen: 1234, ResultLen: 56,
		Completion: record.CompletionDigest(strings.Repeat("ab", 32)), Updated: 1700000000002, Created: 1700000000001,
		Lease: 1700000030001, Expires: 1700003600001, Gen: record.NewGeneration(), IDTag: record.IdentityTag("run-1", "call-1"),
		RequestLen: 78, RequestSHA256: strings.Repeat("0f", 32), MaxResult: 16384, MaxRecord: 1 << 20,
		Owner: strings.Repeat("9a", 16), Tool: "kb.search"}
}

func TestEncodeDecode(t *testing.T) {
	h := sample()
	s, err := record.Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != record.OffOwner+23+1+len("kb.search")+1 || s[0] != record.Version || s[record.OffStatus] != 'R' {
		t.Fatalf("header %q", s)
	}
	got, err := record.Decode(s)
	if err != nil || got != h {
		t.Fatalf("Decode(Encode(h)) = %+v, %v; want %+v", got, err, h)
	}
	// A request after the header's newline is the field's rest, whatever it
	// holds.
	const request = `{"q":"a b\nc"}`
	if got, err := record.Decode(s + request); err != nil || got != h {
		t.Fatalf("Decode of a header and a request = %+v, %v; want %+v", got, err, h)
	}
	if header, rest, err := record.Split(s + request); err != nil || header != s || rest != request {
		t.Fatalf("Split = %q, %q, %v", header, rest, err)
	}
	// An error code is kept; owners of another form are kept as given.
	h.Status, h.Evidence, h.Error, h.Owner, h.Overflow = "ERROR", "ERROR", "RESULT_TOO_LARGE", "worker-1", true
	s, _ = record.Encode(h)
	if got, err := record.Decode(s); err != nil || got != h {
		t.Fatalf("Decode(Encode(%+v)) = %+v, %v", h, got, err)
	}
}

// What a script splices is what Encode writes at the same offsets.
func TestSegmentsAreTheHeadersBytes(t *testing.T) {
	h := sample()
	full, _ := record.Encode(h)
	seg, err := record.Segment(h.Status, h.Evidence, h.Error, h.Overflow, h.RawLen, h.ResultLen, h.Completion)
	if err != nil || seg != full[record.OffStatus:record.OffUpdated] {
		t.Fatalf("Segment = %q, %v; the header holds %q", seg, err, full[record.OffStatus:record.OffUpdated])
	}
	p := h
	p.Status, p.Evidence, p.RawLen, p.ResultLen, p.Completion = "PROJECTING", "UNKNOWN", 0, 0, record.NoCompletion
	pfull, _ := record.Encode(p)
	head, mid, tail, err := record.BeginHeader(p.Owner, p.Tool, p.IDTag, p.RequestSHA256, p.RequestLen)
	if err != nil || head != pfull[:record.OffUpdated] || mid != pfull[record.OffIDTag:record.OffMaxResult] ||
		tail != pfull[record.OffOwner:] {
		t.Fatalf("BeginHeader = %q, %q, %q, %v; the header is %q", head, mid, tail, err, pfull)
	}
	over, err := record.OverflowSegment(h.Completion)
	if o, _ := record.Decode(pfull[:record.OffStatus] + over + pfull[record.OffUpdated:]); err != nil || !o.Overflow ||
		o.Error != "RESULT_TOO_LARGE" || o.Completion != h.Completion || o.RawLen != 0 {
		t.Fatalf("overflow header decodes to %+v, %v", o, err)
	}
	if w := record.OwnerWord(p.Owner); !strings.HasPrefix(pfull[record.OffOwner:], w) {
		t.Fatalf("OwnerWord %q is not at the header's owner: %q", w, pfull[record.OffOwner:])
	}
	claim := record.NewClaim()
	seg, err2 := record.AbandonedSegment(claim)
	if err2 != nil {
		t.Fatal(err2)
	}
	a, _ := record.Decode(pfull[:record.OffStatus] + seg + pfull[record.OffUpdated:])
	if a.Status != "ERROR" || a.Error != "EXECUTION_ABANDONED" || a.Completion != record.AbandonMark+claim || !record.IsAbandoned(a.Completion) {
		t.Fatalf("abandoned header decodes to %+v", a)
	}
	if record.IsAbandoned(record.NoCompletion) || !record.ValidClaim(claim) || record.ValidClaim(claim+"x") || record.ValidClaim("~~~~~~~~~~") {
		t.Fatal("IsAbandoned or ValidClaim takes what is not")
	}
	if _, err := record.AbandonedSegment("short"); err == nil {
		t.Fatal("AbandonedSegment took a claim of another width")
	}
}

func TestEncodeRefuses(t *testing.T) {
	for name, f := range map[string]func(*record.Header){
		"status":     func(h *record.Header) { h.Status = "DONE" },
		"evidence":   func(h *record.Header) { h.Evidence = "MAYBE" },
		"negative":   func(h *record.Header) { h.RawLen = -1 },
		"too large":  func(h *record.Header) { h.RawLen = 1e10 },
		"code":       func(h *record.Header) { h.Error = strings.Repeat("X", 27) },
		"generation": func(h *record.Header) { h.Gen = "short" },
		"owner":      func(h *record.Header) { h.Owner = "a b" },
		"tool":       func(h *record.Header) { h.Tool = "" },
	} {
		h := sample()
		f(&h)
		if s, err := record.Encode(h); err == nil {
			t.Errorf("%s: encoded %q", name, s)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	good, _ := record.Encode(sample())
	for name, s := range map[string]string{
		"empty":    "",
		"version":  "X" + good[1:],
		"status":   good[:1] + "X" + good[2:],
		"evidence": good[:2] + "X" + good[3:],
		"overflow": good[:3] + "2" + good[4:],
		"digits":   good[:record.OffRawLen] + "x" + good[record.OffRawLen+1:],
		"no tool":  good[:record.OffOwner] + "owner\n",
		"no end":   good[:len(good)-1],
		"short":    good[:record.OffOwner],
	} {
		if _, err := record.Decode(s); !errors.Is(err, record.ErrHeader) {
			t.Errorf("%s: Decode(%q) = %v, want ErrHeader", name, s, err)
		}
	}
	// A header of layout 1 is another layout's, told apart from garbage.
	if _, err := record.Decode("1" + good[1:]); !errors.Is(err, record.ErrLayout) {
		t.Errorf("a layout 1 header: %v, want ErrLayout", err)
	}
}

// waste is what an allocation of a string of n bytes leaves unused, from
// Redis's sds headers (and NUL) and jemalloc's size classes, written from
// their definitions so that Cut is checked against them, not itself.
func waste(n int) int {
	a := n
	for _, t := range []struct{ below, header int }{{32, 2}, {256, 4}, {65536, 6}, {1 << 32, 10}} {
		if n < t.below {
			a = n + t.header
			break
		}
	}
	c := 8
	for step := 8; c < a; c += step {
		if c >= 64 && c&(c-1) == 0 {
			step = c / 4 // four classes per doubling above 64
		}
	}
	return c - a
}

// Cut keeps every byte, in order, in at most MaxParts parts; every part
// but the last fills its size class, and the last wastes little unless it
// is the MaxParts-th.
func TestCut(t *testing.T) {
	for n := 0; n < 300000; n = n*9/8 + 1 {
		p := bytes.Repeat([]byte("x"), n)
		for i := range p {
			p[i] = byte(i)
		}
		parts := record.Cut(p)
		var joined []byte
		used := 0
		for i, q := range parts {
			if len(q) == 0 {
				for _, r := range parts[i:] {
					if len(r) != 0 {
						t.Fatalf("%d bytes: an empty part before a full one: %v", n, lens(parts))
					}
				}
				break
			}
			used++
			joined = append(joined, q...)
		}
		if !bytes.Equal(joined, p) {
			t.Fatalf("%d bytes: parts %v do not join to the payload", n, lens(parts))
		}
		for i := 0; i < used; i++ {
			w := waste(len(parts[i]))
			if i < used-1 && w != 0 || i == used-1 && used < record.MaxParts && w > 48 {
				t.Fatalf("%d bytes: part %d of %v wastes %d bytes", n, i+1, lens(parts), w)
			}
		}
	}
}

func lens(p [record.MaxParts][]byte) []int {
	var out []int
	for _, q := range p {
		out = append(out, len(q))
	}
	return out
}

// A header read back from Redis may be anything a writer put there: Decode
// never panics, and what it accepts encodes back to the same bytes (when
// its owner and digest are in their stored forms).
func FuzzDecode(f *testing.F) {
	good, _ := record.Encode(sample())
	f.Add(good)
	f.Add(good[:record.OffOwner] + "worker-1 kb.search\n{}")
	f.Add("")
	f.Add(strings.Repeat("1", record.OffOwner+3))
	f.Fuzz(func(t *testing.T, s string) {
		h, err := record.Decode(s)
		if err != nil {
			return
		}
		again, err := record.Encode(h)
		if err != nil {
			return // e.g. an error code with trailing bytes Encode refuses
		}
		if _, err := record.Decode(again); err != nil {
			t.Fatalf("Decode(Encode(Decode(%q))) failed: %v", s, err)
		}
	})
}

// A run's limits and identity pack to fixed widths and back; what does not
// fit is refused, and a layout field tells this layout from others.
func TestPackedRunFields(t *testing.T) {
	p, err := record.PackLimits(256, 64, 1<<40, 16384, 16<<20)
	if err != nil || len(p) != record.PackedLimitsLen {
		t.Fatalf("PackLimits = %q, %v", p, err)
	}
	if a, b, c, d, e, ok := record.UnpackLimits(p); !ok || a != 256 || b != 64 || c != 1<<40 || d != 16384 || e != 16<<20 {
		t.Fatalf("UnpackLimits(%q) = %d %d %d %d %d %v", p, a, b, c, d, e, ok)
	}
	// A header keeps the last two where the packed limits end.
	h := sample()
	h.MaxResult, h.MaxRecord = 16384, 16<<20
	full, _ := record.Encode(h)
	if full[record.OffMaxResult:record.OffOwner] != p[len(p)-(record.OffOwner-record.OffMaxResult):] {
		t.Fatalf("the header's limits %q are not the packed ones' end %q", full[record.OffMaxResult:record.OffOwner], p)
	}
	if _, err := record.PackLimits(1<<40, 1, 1, 1, 1); err == nil {
		t.Fatal("PackLimits took a limit over its width")
	}
	for v, want := range map[string]struct {
		limits string
		ok     bool
	}{
		record.RunLayoutValue(p): {p, true}, record.RunLayout: {"", true}, "layout 3": {"", false}, "1": {"", false},
		record.RunLayout + " short": {"", false},
	} {
		if got, ok := record.ParseRunLayout(v); ok != want.ok || ok && got != want.limits {
			t.Errorf("ParseRunLayout(%q) = %q, %v", v, got, ok)
		}
	}
	tag := strings.Repeat("ab", 32)
	gen, secret := record.NewGeneration(), record.NewRunSecret()
	id, err := record.PackIdent(tag, gen, secret)
	if err != nil {
		t.Fatal(err)
	}
	if a, b, c, ok := record.UnpackIdent(id); !ok || a != tag || b != gen || c != secret {
		t.Fatalf("UnpackIdent(%q) = %q %q %q %v", id, a, b, c, ok)
	}
	if _, err := record.PackIdent("short", gen, secret); err == nil {
		t.Fatal("PackIdent took a short principal tag")
	}
}

// A request is kept in the header's field when both fit EmbedRequest, else
// in parts of its own.
func TestCutRequest(t *testing.T) {
	in, parts := record.CutRequest(200, []byte("{}"))
	if string(in) != "{}" || parts[0] != nil {
		t.Fatalf("a short request: %q, %v", in, lens(parts))
	}
	long := bytes.Repeat([]byte("x"), record.EmbedRequest)
	in, parts = record.CutRequest(200, long)
	if in != nil || len(parts[0]) == 0 {
		t.Fatalf("a long request: %d bytes in the header, parts %v", len(in), lens(parts))
	}
}

// An owner or digest is kept in base64url only when it is lowercase hex of
// its width, the form that encodes back to it; any other is kept as given.
func TestStoredForms(t *testing.T) {
	lower, upper := strings.Repeat("9a", 16), strings.Repeat("9A", 16)
	if s := record.StoreOwner(lower); !strings.HasPrefix(s, "~") || record.LoadOwner(s) != lower {
		t.Fatalf("a lowercase hex owner is stored as %q", s)
	}
	for _, o := range []string{upper, lower[:31] + "g", lower + "00", "worker-1"} {
		if s := record.StoreOwner(o); s != o || record.LoadOwner(s) != o {
			t.Fatalf("owner %q is stored as %q", o, s)
		}
	}
	d := strings.Repeat("0f", 32)
	if s := record.StoreDigest(d); len(s) != 43 || record.LoadDigest(s) != d {
		t.Fatalf("digest %q is stored as %q", d, s)
	}
	if s := record.StoreDigest(strings.ToUpper(d)); s != strings.ToUpper(d) {
		t.Fatalf("an uppercase digest is stored as %q", s)
	}
}
