package gateway

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scripted is a connection that reads the messages it holds, then EOF.
type scripted struct {
	mcp.Connection
	msgs []jsonrpc.Message
}

func (s *scripted) Read(context.Context) (jsonrpc.Message, error) {
	if len(s.msgs) == 0 {
		return nil, io.EOF
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return m, nil
}

// A stdio connection puts a barrier just before every response it reads,
// numbered, and a wait ends as soon as the barrier of the last response
// read is handled — not after a fixed time.
func TestBarrierBeforeEachResponse(t *testing.T) {
	id1, _ := jsonrpc.MakeID(float64(1))
	id2, _ := jsonrpc.MakeID(float64(2))
	note := &jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(`{"level":"info","data":"x"}`)}
	st := newBarrierState()
	c := &barrierConn{Connection: &scripted{msgs: []jsonrpc.Message{note, &jsonrpc.Response{ID: id1}, note, &jsonrpc.Response{ID: id2}}}, st: st}
	var got []string
	for {
		m, err := c.Read(context.Background())
		if err != nil {
			break
		}
		switch m := m.(type) {
		case *jsonrpc.Request:
			got = append(got, m.Method+" "+string(m.Params))
		case *jsonrpc.Response:
			got = append(got, "response")
		}
	}
	want := []string{
		`notifications/message {"level":"info","data":"x"}`,
		`notifications/progress {"progressToken":"toolcanon-barrier-s:` + st.nonce + `:1","progress":0}`,
		"response",
		`notifications/message {"level":"info","data":"x"}`,
		`notifications/progress {"progressToken":"toolcanon-barrier-s:` + st.nonce + `:2","progress":0}`,
		"response",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Two responses read: a wait ends when barrier 2 is handled.
	start := time.Now()
	go func() {
		time.Sleep(20 * time.Millisecond)
		st.reached(1)
		time.Sleep(20 * time.Millisecond)
		st.reached(2)
	}()
	st.wait(5 * time.Second)
	if d := time.Since(start); d < 40*time.Millisecond || d > 2*time.Second {
		t.Fatalf("the wait took %v", d)
	}
	start = time.Now()
	st.wait(5 * time.Second) // nothing more read: nothing to wait for
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("a wait with nothing to wait for took %v", d)
	}
}
