package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// DefaultMaxLineBytes bounds one stdio message when
// StdioTransport.MaxLineBytes is zero.
const DefaultMaxLineBytes = 4 << 20

// StdioTransport serves one agent over newline-delimited JSON-RPC, as
// mcp.StdioTransport does, but no input ends the session and every request
// gets exactly one answer: each line is screened before the SDK reads it. A
// line that is not strict JSON is answered with a parse error (-32700, id
// null); a JSON array (batches, which MCP 2025-06-18 removed), a value that
// is not an object, a message without "jsonrpc": "2.0", an id that is not a
// string or an integer within ±(2^53−1), an id without a method, a result
// or an error, a request whose id is in flight already, a message the SDK
// cannot decode, and a line longer than MaxLineBytes, with an invalid
// request (-32600, the message's id when it has a usable one, else null);
// params that are not an object, with invalid params (-32602). Blank lines
// are skipped. Only a failure to read or write the streams ends the
// session with an error.
type StdioTransport struct {
	Reader       io.Reader // nil: os.Stdin
	Writer       io.Writer // nil: os.Stdout
	MaxLineBytes int       // 0: DefaultMaxLineBytes
}

// Connect implements mcp.Transport.
func (t *StdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	r, w := t.Reader, t.Writer
	if r == nil {
		r = os.Stdin
	}
	if w == nil {
		w = os.Stdout
	}
	limit := t.MaxLineBytes
	if limit <= 0 {
		limit = DefaultMaxLineBytes
	}
	out := &stdioOut{w: w, inFlight: map[string]struct{}{}}
	pr, pw := io.Pipe()
	go screen(r, pw, out, limit)
	// The SDK reads only screened lines, each at most limit bytes and a
	// newline.
	return (&mcp.IOTransport{Reader: pr, Writer: out, MaxLineLength: limit + 2}).Connect(ctx)
}

// stdioOut writes whole messages, the SDK's and the screen's answers, so
// that they never interleave. It keeps the ids of the requests the screen
// passed on that the SDK has not answered yet: the SDK drops a request
// whose id is in flight without a word.
type stdioOut struct {
	mu       sync.Mutex
	w        io.Writer
	inFlight map[string]struct{} // idKey of each request in flight
}

// Write writes one message of the SDK's: an answer ends its request's
// flight, before the agent can read it and reuse the id.
func (o *stdioOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if key, ok := answered(p); ok {
		delete(o.inFlight, key)
	}
	return o.w.Write(p)
}

func (o *stdioOut) Close() error { return nil }

// answer writes the screen's answer to a line it did not pass on.
func (o *stdioOut) answer(id json.RawMessage, code int64, msg string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, err := o.w.Write(rpcError(echoID(id), code, msg))
	return err
}

// begin records a request's id as in flight, or reports false when it is
// already.
func (o *stdioOut) begin(id json.RawMessage) bool {
	key := idKey(id)
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, dup := o.inFlight[key]; dup {
		return false
	}
	o.inFlight[key] = struct{}{}
	return true
}

// sdkAnswer is how the SDK's encoding of a message with an id starts
// (its members in the order of its wire struct: jsonrpc, id, then method
// for a request, result or error for an answer).
const sdkAnswer = `{"jsonrpc":"2.0","id":`

// answered returns the idKey of the request an SDK message answers, if it
// is an answer.
func answered(p []byte) (key string, ok bool) {
	rest, ok := bytes.CutPrefix(p, []byte(sdkAnswer))
	if !ok || len(rest) == 0 {
		return "", false
	}
	var end int
	var err *strictjson.SyntaxError
	if rest[0] == '"' {
		end, _, err = strictjson.ScanString(rest, 0)
	} else {
		end, err = strictjson.ScanNumber(rest, 0)
	}
	if err != nil || !bytes.HasPrefix(rest[end:], []byte(`,"result"`)) && !bytes.HasPrefix(rest[end:], []byte(`,"error"`)) {
		return "", false
	}
	return idKey(rest[:end]), true
}

// screen copies the well-formed lines of r to pw and answers the others on
// out. It ends when r ends (pw then reports EOF, or r's error) or when the
// SDK closes its side.
func screen(r io.Reader, pw *io.PipeWriter, out *stdioOut, limit int) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		var err error
		var tooLong bool
		line, tooLong, err = readLine(br, line[:0], limit)
		var werr error
		switch {
		case tooLong:
			werr = out.answer(nil, jsonrpc.CodeInvalidRequest, "Invalid request: a message is at most "+strconv.Itoa(limit)+" bytes")
		case len(bytes.TrimSpace(line)) > 0:
			v := classify(line)
			switch {
			case !v.forward:
				werr = out.answer(v.id, v.code, v.msg)
			case v.request && !out.begin(v.id):
				werr = out.answer(v.id, jsonrpc.CodeInvalidRequest, "Invalid request: a request with this id is in flight; use another id")
			default:
				_, werr = pw.Write(append(liftTask(line), '\n'))
			}
		}
		if werr != nil {
			pw.CloseWithError(werr)
			return
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			pw.CloseWithError(err)
			return
		}
	}
}

// readLine appends the next line of br, without its line ending, to dst. A
// line over limit bytes is read to its end but not kept (tooLong).
func readLine(br *bufio.Reader, dst []byte, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(dst)+len(chunk) > limit+2 { // room for "\r\n"
				tooLong, dst = true, dst[:0]
			} else {
				dst = append(dst, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		dst = bytes.TrimSuffix(dst, []byte("\n"))
		dst = bytes.TrimSuffix(dst, []byte("\r"))
		if !tooLong && len(dst) > limit {
			tooLong, dst = true, dst[:0]
		}
		return dst, tooLong, err
	}
}

// verdict is what the screen makes of one message.
type verdict struct {
	forward bool            // pass it on to the SDK
	request bool            // it is a request: a method and an id
	id      json.RawMessage // its id, when valid (validID)
	code    int64           // the error it is answered with, when not forwarded
	msg     string
}

// classify says whether a message (a stdio line, an HTTP body) goes on to
// the SDK, or the error it is answered with. Its members are read as the
// SDK reads them: names compared exactly, each once.
func classify(line []byte) verdict {
	var id, version, method, params, result, rpcErr []byte
	walk := strictjson.Walk{Top: func(name []byte, start, end int) {
		v := line[start:end]
		switch string(name) {
		case "id":
			id = v
		case "jsonrpc":
			version = v
		case "method":
			method = v
		case "params":
			params = v
		case "result":
			result = v
		case "error":
			rpcErr = v
		}
	}}
	if strictjson.CheckWalk(line, strictjson.MaxDepth, &walk) != nil {
		return verdict{code: jsonrpc.CodeParseError, msg: "Parse error: the line is not one strict JSON value"}
	}
	switch line[strictjson.SkipSpace(line, 0)] {
	case '{':
	case '[':
		return verdict{code: jsonrpc.CodeInvalidRequest, msg: "Invalid request: JSON-RPC batches are not supported (MCP 2025-06-18 removed them)"}
	default:
		return verdict{code: jsonrpc.CodeInvalidRequest, msg: "Invalid request: a message is a JSON object"}
	}
	if id != nil && !validID(id) {
		// The SDK would read 1.5 as 1 and 2^63 as -2^63, and answer
		// another id than the one asked, or none for null.
		return verdict{code: jsonrpc.CodeInvalidRequest, msg: "Invalid request: an id is a string or an integer within ±(2^53-1)"}
	}
	v := verdict{id: id, code: jsonrpc.CodeInvalidRequest}
	if s, ok := jsonString(version); !ok || s != "2.0" {
		v.msg = `Invalid request: a message carries "jsonrpc": "2.0"`
		return v
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		v.msg = "Invalid request: not a JSON-RPC request, notification or response"
		return v
	}
	if method == nil && id != nil && result == nil && rpcErr == nil {
		// The SDK would take it for an answer to nothing, and drop it.
		v.msg = "Invalid request: a message with an id has a method (a request), or a result or an error (a response)"
		return v
	}
	// MCP's params are an object: any other value would be answered with
	// the decoder's own words.
	if len(params) > 0 && params[0] != '{' && string(params) != "null" {
		v.code, v.msg = jsonrpc.CodeInvalidParams, "Invalid params: params is a JSON object"
		return v
	}
	return verdict{forward: true, request: method != nil && id != nil, id: id}
}

// validID reports whether raw (strict JSON) is an id the SDK reads as
// written: a string, or an integer within ±(2^53-1) written as it writes
// one back (no fraction, exponent or -0).
func validID(raw []byte) bool {
	if len(raw) > 0 && raw[0] == '"' {
		return true
	}
	const max = 1<<53 - 1
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil && -max <= n && n <= max && strconv.FormatInt(n, 10) == string(raw)
}

// echoID is the id an answer of the screen echoes: id when it is valid and
// short, else none (null).
func echoID(id json.RawMessage) json.RawMessage {
	if len(id) > 256 || !validID(id) {
		return nil
	}
	return id
}

// idKey names a valid id as the SDK tells ids apart: "1" and 1 differ, and
// "\u0061" is "a".
func idKey(id []byte) string {
	if s, ok := jsonString(id); ok {
		return "s" + s
	}
	return "n" + string(id)
}

// jsonString decodes raw when it is a JSON string.
func jsonString(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	s, end, escaped, err := strictjson.DecodeString(nil, raw, 0)
	switch {
	case err != nil:
		return "", false
	case !escaped:
		return string(raw[1 : end-1]), true
	}
	return string(s), true
}
