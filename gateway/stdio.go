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
// mcp.StdioTransport does, but no input ends the session: each line is
// screened before the SDK reads it. A line that is not strict JSON is
// answered with a parse error (-32700, id null); a JSON array (batches, which
// MCP 2025-06-18 removed), a value that is not an object, a message without
// "jsonrpc": "2.0" or one the SDK cannot decode, and a line longer than
// MaxLineBytes, with an invalid request (-32600, the message's id when it
// has a usable one, else null); params that are not an object, with
// invalid params (-32602). Blank lines are skipped. Only a failure to
// read or write the streams ends the session with an error.
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
	out := &lockedWriter{w: w}
	pr, pw := io.Pipe()
	go screen(r, pw, out, limit)
	// The SDK reads only screened lines, each at most limit bytes and a
	// newline.
	return (&mcp.IOTransport{Reader: pr, Writer: out, MaxLineLength: limit + 2}).Connect(ctx)
}

// lockedWriter writes whole messages: the SDK's and the screen's answers
// never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// screen copies the well-formed lines of r to pw and answers the others on
// out. It ends when r ends (pw then reports EOF, or r's error) or when the
// SDK closes its side.
func screen(r io.Reader, pw *io.PipeWriter, out io.Writer, limit int) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		var err error
		var tooLong bool
		line, tooLong, err = readLine(br, line[:0], limit)
		if tooLong {
			if werr := answer(out, nil, jsonrpc.CodeInvalidRequest, "Invalid request: a message is at most "+strconv.Itoa(limit)+" bytes"); werr != nil {
				pw.CloseWithError(werr)
				return
			}
		} else if len(bytes.TrimSpace(line)) > 0 {
			fwd, id, code, msg := classify(line)
			var werr error
			if fwd {
				_, werr = pw.Write(append(liftTask(line), '\n'))
			} else {
				werr = answer(out, id, code, msg)
			}
			if werr != nil {
				pw.CloseWithError(werr)
				return
			}
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

// classify says whether a line goes on to the SDK, or the error it is
// answered with.
func classify(line []byte) (forward bool, id json.RawMessage, code int64, msg string) {
	if strictjson.Check(line, strictjson.MaxDepth) != nil {
		return false, nil, jsonrpc.CodeParseError, "Parse error: the line is not one strict JSON value"
	}
	switch line[strictjson.SkipSpace(line, 0)] {
	case '{':
	case '[':
		return false, nil, jsonrpc.CodeInvalidRequest, "Invalid request: JSON-RPC batches are not supported (MCP 2025-06-18 removed them)"
	default:
		return false, nil, jsonrpc.CodeInvalidRequest, "Invalid request: a message is a JSON object"
	}
	// One decoding of what the screen reads; a "jsonrpc" that is no string
	// fails it, and the other members are still read.
	var head struct {
		ID      json.RawMessage `json:"id"`
		JSONRPC *string         `json:"jsonrpc"`
		Params  json.RawMessage `json:"params"`
	}
	err := json.Unmarshal(line, &head)
	if !usableID(head.ID) {
		head.ID = nil
	}
	if err != nil || head.JSONRPC == nil || *head.JSONRPC != "2.0" {
		return false, head.ID, jsonrpc.CodeInvalidRequest, `Invalid request: a message carries "jsonrpc": "2.0"`
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return false, head.ID, jsonrpc.CodeInvalidRequest, "Invalid request: not a JSON-RPC request, notification or response"
	}
	// MCP's params are an object: any other value would be answered with
	// the decoder's own words.
	if p := head.Params; len(p) > 0 && p[0] != '{' && string(p) != "null" {
		return false, head.ID, jsonrpc.CodeInvalidParams, "Invalid params: params is a JSON object"
	}
	return true, nil, 0, ""
}

// usableID reports whether raw is an id an answer may echo: a string or an
// integer.
func usableID(raw json.RawMessage) bool {
	if len(raw) == 0 || len(raw) > 256 {
		return false
	}
	if raw[0] == '"' {
		return true
	}
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}

// answer writes one JSON-RPC error response, with id or null.
func answer(out io.Writer, id json.RawMessage, code int64, msg string) error {
	_, err := out.Write(rpcError(id, code, msg))
	return err
}
