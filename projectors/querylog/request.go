package querylog

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/internal/view"
)

// Request bounds.
const (
	MaxTopicBytes          = 128
	MaxQueryBytes          = 512
	DefaultLookbackMinutes = 60
	MaxLookbackMinutes     = 7 * 24 * 60
)

// Request is the logical query-log request: {topic, query, lookback_minutes?}.
type Request struct {
	Topic           string
	Query           string
	LookbackMinutes int
}

// ParseRequest validates a request input: a JSON object with a topic (1–128
// bytes of [A-Za-z0-9._/-]), a query (1–512 bytes of text) and an optional
// integer lookback_minutes in [1, 10080] (default 60). Unknown or repeated
// fields are refused. Errors carry INVALID_INPUT. The returned strings own
// their bytes: in may be reused afterwards.
func ParseRequest(in []byte) (Request, error) {
	var r Request
	if !projectors.Valid(in) {
		return r, invalid("input is not valid JSON")
	}
	root := gjson.Parse(view.String(in))
	if !root.IsObject() {
		return r, invalid("input is not an object")
	}
	var topic, query, lookback gjson.Result
	bad := ""
	root.ForEach(func(k, v gjson.Result) bool {
		var slot *gjson.Result
		switch k.String() {
		case "topic":
			slot = &topic
		case "query":
			slot = &query
		case "lookback_minutes":
			slot = &lookback
		default:
			bad = "input has an unknown field"
			return false
		}
		if slot.Exists() {
			bad = "input repeats a field"
			return false
		}
		*slot = v
		return true
	})
	if bad != "" {
		return r, invalid(bad)
	}
	if topic.Type != gjson.String || query.Type != gjson.String {
		return r, invalid("topic and query must be strings")
	}
	// The request outlives in, whose buffer the caller may reuse: its
	// strings own their bytes (gjson returns views of in).
	r.Topic, r.Query = strings.Clone(topic.String()), strings.Clone(query.String())
	if len(r.Topic) == 0 || len(r.Topic) > MaxTopicBytes || !topicOK(r.Topic) {
		return r, invalid("topic must be 1..128 bytes of [A-Za-z0-9._/-]")
	}
	if len(bytes.TrimSpace([]byte(r.Query))) == 0 || len(r.Query) > MaxQueryBytes || !projectors.ValidText(r.Query) {
		return r, invalid("query must be 1..512 bytes of text")
	}
	r.LookbackMinutes = DefaultLookbackMinutes
	if lookback.Exists() {
		n, err := strconv.ParseInt(lookback.Raw, 10, 32)
		if lookback.Type != gjson.Number || err != nil || n < 1 || n > MaxLookbackMinutes {
			return r, invalid("lookback_minutes must be an integer in [1, 10080]")
		}
		r.LookbackMinutes = int(n)
	}
	return r, nil
}

func topicOK(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/') {
			return false
		}
	}
	return true
}

func invalid(msg string) error {
	return canonical.Errorf(canonical.CodeInvalidInput, "querylog: %s", msg)
}
