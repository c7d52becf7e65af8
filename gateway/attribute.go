package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Attribution: MCP does not say which call an upstream's log message,
// sampling request or elicitation request belongs to. The gateway passes
// one to an agent only when it can tell from where it arrived:
//
//   - over streamable HTTP, the message came on the response stream of the
//     call's own POST: the transport stamps every such message with the
//     call's mark (metaCallMark, a secret of the call never sent upstream)
//     as it reads the stream, and strips the member from every other
//     message, so that the relay finds the call by its mark;
//   - over stdio, the message came on a connection of the agent's own
//     (agentConns): a stdio upstream has one process per agent session
//     whose calls want such messages.
//
// Anything else is dropped (a log message) or refused (a request).

// metaCallMark is the _meta member the HTTP transport stamps on a relayable
// message read on a call's response stream.
const metaCallMark = "io.github.toolcanon/callMark"

// relayedMethods are the methods of the messages an agent may be passed.
var relayedMethods = map[string]bool{
	"notifications/message":  true,
	"sampling/createMessage": true,
	"elicitation/create":     true,
}

// mentionsRelayed reports whether b may be a message of a relayed method,
// so that it must be decoded: it names one plainly, or holds an escape,
// which could spell one (or a forged mark) otherwise. Anything else — a
// result, a progress notification — passes without being decoded.
func mentionsRelayed(b []byte) bool {
	if bytes.IndexByte(b, '\\') >= 0 {
		return true
	}
	if !bytes.Contains(b, []byte(`"method"`)) {
		return false
	}
	for m := range relayedMethods {
		if bytes.Contains(b, []byte(m)) {
			return true
		}
	}
	return false
}

// callMarkKey carries, in the context of an upstream tools/call, the mark
// of the call, for the transport to stamp.
type callMarkKey struct{}

// withCallMark puts a call's mark in ctx.
func withCallMark(ctx context.Context, mark string) context.Context {
	return context.WithValue(ctx, callMarkKey{}, mark)
}

// markOf returns the mark in meta, "" when none.
func markOf(meta mcp.Meta) string {
	s, _ := meta[metaCallMark].(string)
	return s
}

// markingTransport stamps the event streams it reads (markStream), and
// puts the call's barrier before its response; reached releases a call
// whose answer is no event stream, or whose stream ended without one.
type markingTransport struct {
	base    http.RoundTripper
	reached func(mark string)
}

// RoundTrip sends r and marks the event stream it answers with the mark in
// r's context, or strips marks from it when r carries none.
func (t markingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	mark, _ := r.Context().Value(callMarkKey{}).(string)
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		ms := markStream(resp.Body, mark, mcp.DefaultMaxEventSize).(*markedStream)
		ms.reached = t.reached
		resp.Body = ms
	} else if mark != "" && t.reached != nil {
		t.reached(mark) // no stream: no notification can come before the answer
	}
	return resp, nil
}

// errEventTooLarge ends a stream whose event passes the bound, as the SDK
// would.
var errEventTooLarge = errors.New("gateway: an event of the upstream's stream passes the size bound")

// markedStream is an event stream as markStream rewrites it.
type markedStream struct {
	src   io.ReadCloser
	r     *bufio.Reader
	mark  string
	max   int
	event []byte // the raw lines of the event being read
	out   []byte // rewritten bytes not yet read
	err   error
	// barred: the call's barrier went before its response (barrier.go);
	// reached, when set, releases the call if the stream ends without one.
	barred  bool
	reached func(mark string)
	noted   bool // a message came before the response
}

// emit passes one event on, rewritten; on a call's stream its response
// comes after the call's barrier — or, when no message came before it,
// the call is released at once: there is nothing to wait for.
func (m *markedStream) emit(raw []byte) {
	if m.mark != "" && !m.barred {
		switch {
		case isResponseEvent(raw):
			m.barred = true
			if m.noted || m.reached == nil {
				m.out = append(m.out, barrierEvent(m.mark)...)
			} else {
				m.reached(m.mark)
			}
		case bytes.Contains(raw, []byte(`"method"`)):
			m.noted = true
		}
	}
	m.out = append(m.out, rewriteEvent(raw, m.mark)...)
}

// ended notes the end of the stream: a call's stream without a response
// releases its call.
func (m *markedStream) ended() {
	if m.mark != "" && !m.barred && m.reached != nil {
		m.barred = true
		m.reached(m.mark)
	}
}

// markStream returns src, a text/event-stream, with each relayable message
// (relayedMethods) rewritten to carry mark under metaCallMark in its
// params' _meta, or no such member when mark is "". Every other event
// passes byte for byte. Events are split, and their fields read, as the
// SDK reads them; an event over max bytes ends the stream with an error.
func markStream(src io.ReadCloser, mark string, max int) io.ReadCloser {
	return &markedStream{src: src, r: bufio.NewReaderSize(src, 4<<10), mark: mark, max: max}
}

func (m *markedStream) Read(p []byte) (int, error) {
	for len(m.out) == 0 && m.err == nil {
		m.fill()
	}
	if len(m.out) == 0 {
		return 0, m.err
	}
	n := copy(p, m.out)
	m.out = m.out[n:]
	return n, nil
}

func (m *markedStream) Close() error {
	m.ended()
	return m.src.Close()
}

// fill reads one line; a blank line ends the event, which is rewritten
// into out.
func (m *markedStream) fill() {
	start := len(m.event)
	for {
		frag, err := m.r.ReadSlice('\n')
		if len(m.event)+len(frag) > m.max {
			m.event, m.err = nil, errEventTooLarge
			m.ended()
			return
		}
		m.event = append(m.event, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			// The stream ended: what is left is one last event.
			m.emit(m.event)
			m.event, m.err = nil, err
			m.ended()
			return
		}
		break
	}
	if len(bytes.TrimRight(m.event[start:], "\r\n")) == 0 {
		m.emit(m.event)
		m.event = m.event[:0]
	}
}

// rewriteEvent returns the raw lines of one event (its blank line
// included), rewritten when the event is a relayable message: its data
// lines become one, the message with mark in its params' _meta (or without
// the member when mark is ""). Any other event is returned as it is.
func rewriteEvent(raw []byte, mark string) []byte {
	if !mentionsRelayed(raw) {
		return raw // a response, a progress notification: not parsed
	}
	var data [][]byte
	name := ""
	for _, line := range bytes.SplitAfter(raw, []byte("\n")) {
		field, value, ok := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(":"))
		if !ok {
			continue // blank, or malformed: the SDK refuses the stream
		}
		switch string(field) {
		case "event":
			name = string(bytes.TrimSpace(value))
		case "data":
			data = append(data, bytes.TrimSpace(value))
		}
	}
	if len(data) == 0 || name != "" && name != "message" {
		return raw
	}
	msg, ok := markMessage(bytes.Join(data, []byte("\n")), mark)
	if !ok {
		return raw
	}
	out := make([]byte, 0, len(raw)+len(mark)+64)
	for _, line := range bytes.SplitAfter(raw, []byte("\n")) {
		field, _, found := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(":"))
		if found && string(field) != "data" {
			out = append(out, line...)
			if !bytes.HasSuffix(line, []byte("\n")) {
				out = append(out, '\n')
			}
		}
	}
	out = append(out, "data: "...)
	out = append(out, msg...)
	return append(out, "\n\n"...)
}

// markMessage returns the JSON-RPC message data with mark set (or removed,
// mark "") under metaCallMark in its params' _meta, when it is a message of
// a relayed method; ok is false for anything else, which is left as it is.
func markMessage(data []byte, mark string) (out []byte, ok bool) {
	if !mentionsRelayed(data) {
		return nil, false
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(data, &msg) != nil {
		return nil, false
	}
	var method string
	if json.Unmarshal(msg["method"], &method) != nil || !relayedMethods[method] {
		return nil, false
	}
	params := map[string]json.RawMessage{}
	if p := msg["params"]; len(p) > 0 && string(p) != "null" {
		if json.Unmarshal(p, &params) != nil {
			return nil, false // not an object: the SDK refuses it
		}
	}
	meta := map[string]json.RawMessage{}
	if m := params["_meta"]; len(m) > 0 {
		_ = json.Unmarshal(m, &meta) // not an object: replaced
	}
	delete(meta, metaCallMark)
	if mark != "" {
		meta[metaCallMark], _ = json.Marshal(mark)
	}
	var err error
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return nil, false
	}
	if msg["params"], err = json.Marshal(params); err != nil {
		return nil, false
	}
	if out, err = json.Marshal(msg); err != nil {
		return nil, false
	}
	return out, true
}
