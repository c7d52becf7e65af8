package strictjson_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/internal/strictjson"
)

// walkLog is what a walk reported, one line per call.
type walkLog struct {
	lines []string
	stop  int // End returns false at this element (1-based), 0 never
	n     int
}

func (l *walkLog) walk(array string) *strictjson.Walk {
	return &strictjson.Walk{
		Array: array,
		Top: func(name []byte, start, end int) {
			l.lines = append(l.lines, fmt.Sprintf("top %s %d-%d", name, start, end))
		},
		Member: func(name, value []byte) {
			l.lines = append(l.lines, fmt.Sprintf("member %s=%s", name, value))
		},
		End: func(isObject bool) bool {
			l.n++
			l.lines = append(l.lines, fmt.Sprintf("end %v", isObject))
			return l.n != l.stop
		},
	}
}

func TestCheckWalkReports(t *testing.T) {
	doc := `{"ok":true, "e\u006etries":[{"ts":"1","m":{"ts":"inner"},"l":[{"x":1}]}, 7, {}, {"k\"q":"v"}],` +
		` "other":[{"ts":"not walked"}], "w":{"from":"a"}}`
	l := &walkLog{}
	if err := strictjson.CheckWalk([]byte(doc), strictjson.MaxDepth, l.walk("entries")); err != nil {
		t.Fatal(err)
	}
	span := func(name, value string) string {
		at := strings.Index(doc, value)
		if at < 0 {
			t.Fatalf("%q not in the document", value)
		}
		return fmt.Sprintf("top %s %d-%d", name, at, at+len(value))
	}
	entries := `[{"ts":"1","m":{"ts":"inner"},"l":[{"x":1}]}, 7, {}, {"k\"q":"v"}]`
	tops := []string{span("ok", "true"), span("entries", entries), span("other", `[{"ts":"not walked"}]`), span("w", `{"from":"a"}`)}
	want := []string{
		tops[0],
		`member ts="1"`, `member m={"ts":"inner"}`, `member l=[{"x":1}]`, "end true",
		"end false",
		"end true",
		`member k\"q="v"`, "end true",
		tops[1], tops[2], tops[3],
	}
	if !reflect.DeepEqual(l.lines, want) {
		t.Fatalf("reports:\n%s\nwant:\n%s", strings.Join(l.lines, "\n"), strings.Join(want, "\n"))
	}
	for _, top := range l.lines {
		var name string
		var start, end int
		if _, err := fmt.Sscanf(top, "top %s %d-%d", &name, &start, &end); err == nil && !json.Valid([]byte(doc[start:end])) {
			t.Errorf("%s: %q is not the member's value", name, doc[start:end])
		}
	}

	// End stops the reports, not the check.
	l = &walkLog{stop: 1}
	if err := strictjson.CheckWalk([]byte(doc), strictjson.MaxDepth, l.walk("entries")); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(l.lines, "|"), strings.Join(append(want[:5:5], tops[1:]...), "|"); got != want {
		t.Fatalf("after a stop: %s, want %s", got, want)
	}
	l = &walkLog{stop: 1}
	if err := strictjson.CheckWalk([]byte(`{"entries":[{},{"a":1,"a":2}]}`), strictjson.MaxDepth, l.walk("entries")); err == nil {
		t.Fatal("a duplicate after the stop was accepted")
	}

	// Not an object, or no such array: nothing, or only Top, is reported.
	for _, d := range []string{`[{"entries":[{"a":1}]}]`, `"entries"`, `7`} {
		l = &walkLog{}
		if err := strictjson.CheckWalk([]byte(d), strictjson.MaxDepth, l.walk("entries")); err != nil || len(l.lines) != 0 {
			t.Fatalf("%s: %v, %q", d, err, l.lines)
		}
	}
	l = &walkLog{}
	if err := strictjson.CheckWalk([]byte(`{"entries":{"a":[{"b":1}]}}`), strictjson.MaxDepth, l.walk("entries")); err != nil ||
		strings.Join(l.lines, "|") != "top entries 11-26" {
		t.Fatalf("an object under the array's name: %v, %q", err, l.lines)
	}
}

// checkWalkCases are documents whose verdict CheckWalk must share with Check.
func checkWalkCases(t testing.TB) [][]byte {
	docs := [][]byte{}
	for _, s := range []string{`{}`, `{"entries":[]}`, `{"entries":[{"a":1},2,"x",[{"b":1}],{"c":{"d":[]}}]}`,
		`{"entries":[{"a":1,"a":2}]}`, `{"entries":[{"a":1},]}`, `{"entries":[{"a":1}`, `{"entries":[{"a"}]}`,
		`{"entries":[{"a":"\ud800"}]}`, `{"entries":[{"a":"` + "\xff" + `"}]}`, `{"entries":1,"entries":2}`,
		`{"entries":[` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `]}`, `{"entries":[{"a":1}]} x`,
		`  {"x":1}  `, `{"entries":[{` + strings.Repeat(`"k":1,`, 20) + `"z":2}]}`, `{"entries":[{}]`} {
		docs = append(docs, []byte(s))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "*", "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	return docs
}

func TestCheckWalkAgreesWithCheck(t *testing.T) {
	for _, doc := range checkWalkCases(t) {
		want := strictjson.Check(doc, strictjson.MaxDepth)
		got := strictjson.CheckWalk(doc, strictjson.MaxDepth, (&walkLog{}).walk("entries"))
		if !sameError(got, want) {
			t.Errorf("%.60q: CheckWalk %v, Check %v", doc, got, want)
		}
	}
}

func sameError(a, b error) bool {
	var x, y *strictjson.SyntaxError
	if errors.As(a, &x) != errors.As(b, &y) {
		return false
	}
	return x == nil || *x == *y
}

// FuzzCheckWalk: CheckWalk's verdict is Check's, and on a valid object it
// reports each top-level member and each member of each object element of
// the walked array once, with the value encoding/json finds for it.
func FuzzCheckWalk(f *testing.F) {
	for _, doc := range checkWalkCases(f) {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		const depth = 8
		type member struct{ name, value string }
		var top, elems []member
		var ends []bool
		w := &strictjson.Walk{
			Array: "entries",
			Top: func(name []byte, start, end int) {
				top = append(top, member{string(name), string(b[start:end])})
			},
			Member: func(name, value []byte) {
				elems = append(elems, member{string(strictjson.AppendUnescaped(nil, name)), string(value)})
			},
			End: func(isObject bool) bool { ends = append(ends, isObject); return true },
		}
		err := strictjson.CheckWalk(b, depth, w)
		if want := strictjson.Check(b, depth); !sameError(err, want) {
			t.Fatalf("%q: CheckWalk %v, Check %v", b, err, want)
		}
		var obj map[string]json.RawMessage
		if err != nil || json.Unmarshal(b, &obj) != nil {
			return
		}
		if len(top) != len(obj) {
			t.Fatalf("%q: %d top-level members reported, %d in the document", b, len(top), len(obj))
		}
		for _, m := range top {
			if v, ok := obj[m.name]; !ok || string(v) != m.value {
				t.Fatalf("%q: member %q reported as %q, is %q", b, m.name, m.value, v)
			}
		}
		var arr []json.RawMessage
		if json.Unmarshal(obj["entries"], &arr) != nil {
			if len(elems) != 0 || len(ends) != 0 {
				t.Fatalf("%q: elements reported without an array", b)
			}
			return
		}
		if len(ends) != len(arr) {
			t.Fatalf("%q: %d elements reported, %d in the array", b, len(ends), len(arr))
		}
		k := 0
		for x, e := range arr {
			var o map[string]json.RawMessage
			isObj := json.Unmarshal(e, &o) == nil
			if ends[x] != isObj {
				t.Fatalf("%q: element %d reported isObject=%v", b, x, ends[x])
			}
			for range o {
				if k >= len(elems) || string(o[elems[k].name]) != elems[k].value {
					t.Fatalf("%q: element %d: members %v, want %v", b, x, elems, o)
				}
				k++
			}
		}
		if k != len(elems) {
			t.Fatalf("%q: %d members reported, %d in the elements", b, len(elems), k)
		}
	})
}
