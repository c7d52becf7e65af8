package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

// sseEvent is one event as the SDK reads a stream: lines split at "\n"
// and trimmed of "\r\n", a blank line ending the event, data lines trimmed
// and joined with "\n".
type sseEvent struct {
	name, id string
	data     []byte
}

// readEvents reads a stream as the SDK does; malformed is true when a line
// has no colon (the SDK refuses the stream there).
func readEvents(b []byte) (evs []sseEvent, malformed bool) {
	var ev sseEvent
	var data [][]byte
	flush := func() {
		if data != nil {
			ev.data = bytes.Join(data, []byte("\n"))
		}
		if ev.name != "" || ev.id != "" || ev.data != nil {
			evs = append(evs, ev)
		}
		ev, data = sseEvent{}, nil
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	for _, line := range lines {
		if len(line) == 0 {
			continue
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			flush()
			continue
		}
		field, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return evs, true
		}
		switch string(field) {
		case "event":
			ev.name = strings.TrimSpace(string(value))
		case "id":
			ev.id = strings.TrimSpace(string(value))
		case "data":
			data = append(data, bytes.TrimSpace(value))
		}
	}
	flush()
	return evs, false
}

// relayable reports whether data is a message of a relayed method, and the
// mark its params' _meta carries.
// Keys are matched exactly, as the SDK's decoder matches them.
func relayable(data []byte) (ok bool, mark string, hasMark bool) {
	var msg map[string]json.RawMessage
	var method string
	if json.Unmarshal(data, &msg) != nil || json.Unmarshal(msg["method"], &method) != nil || !relayedMethods[method] {
		return false, "", false
	}
	var params map[string]json.RawMessage
	var meta map[string]any
	_ = json.Unmarshal(msg["params"], &params)
	_ = json.Unmarshal(params["_meta"], &meta)
	v, has := meta[metaCallMark]
	mark, _ = v.(string)
	return true, mark, has
}

func marked(t testing.TB, in, mark string) []byte {
	t.Helper()
	out, err := io.ReadAll(markStream(io.NopCloser(strings.NewReader(in)), mark, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A relayable message read on a call's stream carries the call's mark; a
// mark the upstream wrote itself is replaced, or removed on a stream that
// answers no call; every other event passes byte for byte.
func TestMarkStream(t *testing.T) {
	in := "id: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\n" +
		"data: \"params\":{\"level\":\"info\",\"data\":\"x\",\"_meta\":{\"" + metaCallMark + "\":\"forged\",\"k\":1}}}\n\n" +
		": keep-alive\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1}}\n\n" +
		"id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"sampling/createMessage\"}\r\n\r\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\\\"method\\\"\"}]}}\n\n"
	for _, mark := range []string{"m-1", ""} {
		out := marked(t, in, mark)
		evs, bad := readEvents(out)
		want, _ := readEvents([]byte(in))
		// A call's stream carries its barrier just before its response,
		// once; a stream of no call none.
		barrier := string(barrierEvent(mark))
		if n := strings.Count(string(out), barrierPrefix); mark != "" && (n != 1 || !strings.Contains(string(out), barrier+"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\"")) || mark == "" && n != 0 {
			t.Fatalf("mark %q: %d barriers in\n%s", mark, n, out)
		}
		evs = slices.DeleteFunc(evs, func(ev sseEvent) bool { return strings.Contains(string(ev.data), barrierPrefix) })
		if bad || len(evs) != len(want) {
			t.Fatalf("mark %q: %d events (malformed %v), want %d:\n%s", mark, len(evs), bad, len(want), out)
		}
		for i, ev := range evs {
			if ev.name != want[i].name || ev.id != want[i].id {
				t.Fatalf("event %d: %+v, want %+v", i, ev, want[i])
			}
			ok, got, has := relayable(ev.data)
			switch {
			case !ok && !bytes.Equal(ev.data, want[i].data):
				t.Fatalf("event %d changed: %s", i, ev.data)
			case ok && (got != mark || has != (mark != "")):
				t.Fatalf("mark %q: event %d carries %q (%v): %s", mark, i, got, has, ev.data)
			}
		}
		if !strings.Contains(string(out), `"k":1`) {
			t.Fatalf("the upstream's own _meta was dropped: %s", out)
		}
	}
	if out := marked(t, "data: {\"id\":1,\"result\":{}}\n\n: c\n", ""); string(out) != "data: {\"id\":1,\"result\":{}}\n\n: c\n" {
		t.Fatalf("a stream without relayable messages changed: %q", out)
	}
	_, err := io.ReadAll(markStream(io.NopCloser(strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n")), "m", 64))
	if !errors.Is(err, errEventTooLarge) {
		t.Fatalf("an event over the bound: %v", err)
	}
}

// Whatever an upstream's stream holds, the rewritten stream reads as the
// same events, each relayable message carrying exactly the call's mark
// (none on a stream that answers no call), and nothing else changed.
func FuzzMarkStream(f *testing.F) {
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\"}}\n\n"), true)
	f.Add([]byte("event: message\ndata: {\"method\":\"elicitation/create\",\"params\":{\"_meta\":{\""+metaCallMark+"\":\"x\"}}}\r\n\r\n"), false)
	f.Add([]byte("data: {\"method\":\"sampling/createMessage\",\"params\":null}\ndata: \n\nid: 9\n"), true)
	f.Add([]byte("data: {\"id\":1,\"result\":{\"method\":\"notifications/message\"}}\n\n:\n\nno colon\n"), false)
	f.Add([]byte("event: other\ndata: {\"method\":\"notifications/message\"}\n\n"), true)
	f.Add([]byte("data: {\"\\u006dethod\":\"notifications\\/message\",\"params\":{\"_meta\":{\"io.github.toolcanon\\/callMark\":\"f\"}}}\n\n"), false)
	f.Fuzz(func(t *testing.T, in []byte, withMark bool) {
		mark := ""
		if withMark {
			mark = "mark-1"
		}
		out, err := io.ReadAll(markStream(io.NopCloser(bytes.NewReader(in)), mark, 1<<16))
		if err != nil {
			if errors.Is(err, errEventTooLarge) {
				return
			}
			t.Fatal(err)
		}
		want, badIn := readEvents(in)
		got, badOut := readEvents(out)
		if badIn {
			return // the SDK refuses the stream either way
		}
		// A call's stream may gain one event: its barrier, just before the
		// response (barrier.go). Apart from it, the events are the input's.
		want, inBarriers := withoutBarriers(want, mark)
		got, barriers := withoutBarriers(got, mark)
		if added := barriers - inBarriers; added < 0 || added > 1 || added == 1 && mark == "" {
			t.Fatalf("%d barrier events added (mark %q)\nin:  %q\nout: %q", added, mark, in, out)
		}
		if badOut || len(got) != len(want) {
			t.Fatalf("%d events (malformed %v), want %d\nin:  %q\nout: %q", len(got), badOut, len(want), in, out)
		}
		for i := range got {
			if got[i].name != want[i].name || got[i].id != want[i].id {
				t.Fatalf("event %d: %+v, want %+v", i, got[i], want[i])
			}
			ok, m, has := relayable(got[i].data)
			inOK, _, _ := relayable(want[i].data)
			if ok && (got[i].name == "" || got[i].name == "message") && (m != mark || has != (mark != "")) {
				t.Fatalf("event %d carries mark %q (%v), want %q: %q", i, m, has, mark, got[i].data)
			}
			if !inOK && !bytes.Equal(got[i].data, want[i].data) {
				t.Fatalf("event %d changed:\n%q\n%q", i, want[i].data, got[i].data)
			}
		}
	})
}

// withoutBarriers returns evs without the barrier events of the call
// marked mark, and how many it dropped.
func withoutBarriers(evs []sseEvent, mark string) ([]sseEvent, int) {
	if mark == "" {
		return evs, 0
	}
	data := bytes.TrimSpace(bytes.TrimPrefix(barrierEvent(mark), []byte("data:")))
	kept := evs[:0:0]
	for _, ev := range evs {
		if ev.name == "" && ev.id == "" && bytes.Equal(ev.data, data) {
			continue
		}
		kept = append(kept, ev)
	}
	return kept, len(evs) - len(kept)
}

// BenchmarkMarkStream is what reading an upstream's event stream costs
// with marking, against reading it as it is, in one run: a call's stream
// of ten progress notifications, one log message and a 64 KiB result.
func BenchmarkMarkStream(b *testing.B) {
	var in bytes.Buffer
	for i := range 10 {
		fmt.Fprintf(&in, "id: %d\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":%d}}\n\n", i, i)
	}
	in.WriteString("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"working\"}}\n\n")
	fmt.Fprintf(&in, "data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":%q}]}}\n\n", strings.Repeat("x", 64<<10))
	stream := in.Bytes()
	for _, c := range []struct {
		name string
		wrap func(io.ReadCloser) io.ReadCloser
	}{
		{"plain", func(r io.ReadCloser) io.ReadCloser { return struct{ io.ReadCloser }{r} }}, // read in chunks, as the SDK does
		{"marked", func(r io.ReadCloser) io.ReadCloser { return markStream(r, "mark-1", 16<<20) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			for range b.N {
				if _, err := io.Copy(io.Discard, c.wrap(io.NopCloser(bytes.NewReader(stream)))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
