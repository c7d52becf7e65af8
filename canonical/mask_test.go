package canonical_test

import (
	"bytes"
	"testing"

	"github.com/toolcanon/toolcanon/canonical"
)

func TestParseHandle(t *testing.T) {
	for _, c := range []struct {
		in   string
		kind canonical.Kind
		id   string
		n    int
	}{
		{"<SECRET:k7Qp2xA9>", "SECRET", "k7Qp2xA9", 17},
		{"<ID:AAAA-_zz> tail", "ID", "AAAA-_zz", 13},
		{"<PRIVATE_KEY:01234567>", "PRIVATE_KEY", "01234567", 22},
	} {
		kind, id, n, ok := canonical.ParseHandle([]byte(c.in))
		if !ok || kind != c.kind || id != c.id || n != c.n {
			t.Errorf("ParseHandle(%q) = %q, %q, %d, %v; want %q, %q, %d", c.in, kind, id, n, ok, c.kind, c.id, c.n)
		}
	}
	for _, in := range []string{
		"", "<", "<SECRET>", "<SECRET:k7Qp2xA>", "<SECRET:k7Qp2xA90>", "<secret:k7Qp2xA9>", "<:k7Qp2xA9>",
		"<_X:k7Qp2xA9>", "<SECRET:k7Qp2x+9>", "<ABCDEFGHIJKLMNOPQ:k7Qp2xA9>", "SECRET:k7Qp2xA9>", "<SECRET:k7Qp2xA9",
	} {
		if _, _, _, ok := canonical.ParseHandle([]byte(in)); ok {
			t.Errorf("ParseHandle(%q) accepted a malformed handle", in)
		}
	}
}

func TestIndexHandle(t *testing.T) {
	in := []byte(`{"q":"a <b <SECRET> <IP:abcdefgh> and <ID:12345678>"}`)
	off, n := canonical.IndexHandle(in)
	if got := string(in[off : off+n]); got != "<IP:abcdefgh>" {
		t.Fatalf("IndexHandle found %q", got)
	}
	if off, _ := canonical.IndexHandle([]byte("<SECRET> <<<")); off != -1 {
		t.Fatalf("IndexHandle found a handle in a text without one, at %d", off)
	}
}

func TestPlaceholdersWriteTheKindOnly(t *testing.T) {
	got := canonical.MaskerOf(nil).AppendMask([]byte("x="), canonical.KindSecret, []byte("hunter2"))
	if string(got) != "x=<SECRET>" {
		t.Fatalf("Placeholders wrote %q", got)
	}
	h := canonical.AppendHandle(nil, canonical.KindEmail, "abcdefgh")
	if kind, id, n, ok := canonical.ParseHandle(h); !ok || kind != canonical.KindEmail || id != "abcdefgh" || n != len(h) {
		t.Fatalf("AppendHandle wrote %q, which does not parse back", h)
	}
}

func TestKindValid(t *testing.T) {
	for _, k := range []canonical.Kind{canonical.KindSecret, canonical.KindPrivateKey, "X"} {
		if !k.Valid() {
			t.Errorf("%q is not valid", k)
		}
	}
	for _, k := range []canonical.Kind{"", "secret", "_X", "A-B", "ABCDEFGHIJKLMNOPQ"} {
		if k.Valid() {
			t.Errorf("%q is valid", k)
		}
	}
}

func FuzzParseHandle(f *testing.F) {
	f.Add([]byte("<SECRET:k7Qp2xA9>"))
	f.Add([]byte("<<ID:abcdefgh>>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		kind, id, n, ok := canonical.ParseHandle(b)
		if !ok {
			return
		}
		if !kind.Valid() || !canonical.ValidHandleID(id) || n > canonical.MaxHandleLen {
			t.Fatalf("ParseHandle(%q) = %q, %q, %d", b, kind, id, n)
		}
		if !bytes.Equal(canonical.AppendHandle(nil, kind, id), b[:n]) {
			t.Fatalf("ParseHandle(%q) does not round-trip", b)
		}
	})
}
