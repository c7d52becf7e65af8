package projectors_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolcanon/toolcanon/projectors"
)

func TestLocateAgreesWithGjson(t *testing.T) {
	doc := []byte(` {"a":{"b":[1,{"c":"x"}],"s":"q\"}"},"blocks":[{"id":"1"},{"id":"2"} , 3],"k\u0065y":true,"dup":1,"dup":2,"arr":[[1],[2]]} `)
	for _, path := range []string{"a", "a.b", "a.s", "blocks", "key", "missing", "a.missing", "dup", "arr", "a.b.1.c", "blocks.#.id"} {
		got := projectors.Locate(doc, path)
		r := gjson.GetBytes(doc, path)
		switch {
		case !r.Exists():
			if got >= 0 {
				t.Errorf("%s: found at %d, gjson finds nothing", path, got)
			}
		case r.Index == 0:
			if got >= 0 {
				t.Errorf("%s: computed value located at %d", path, got)
			}
		case path == "dup":
			// gjson reports the first member, Locate the last: decoders
			// differ; both are members named dup.
			if got < 0 || doc[got] != '2' {
				t.Errorf("dup at %d", got)
			}
		default:
			if got != r.Index {
				t.Errorf("%s: at %d, gjson at %d", path, got, r.Index)
			}
		}
	}
}

func TestEachElementAndMember(t *testing.T) {
	doc := []byte(`{"xs":[ {"a":"1","b":{"c":[1,2]}} , "s]" ,[1,[2]], 3 ,null]}`)
	var elems []string
	ok := projectors.EachElement(doc, projectors.Locate(doc, "xs"), func(e []byte) bool {
		elems = append(elems, string(e))
		return true
	})
	want := []string{`{"a":"1","b":{"c":[1,2]}}`, `"s]"`, `[1,[2]]`, `3`, `null`}
	if !ok || len(elems) != len(want) {
		t.Fatalf("%q", elems)
	}
	for i := range want {
		if elems[i] != want[i] {
			t.Fatalf("element %d: %q", i, elems[i])
		}
	}
	var keys []string
	projectors.EachMember([]byte(elems[0]), func(k, v []byte) bool {
		keys = append(keys, string(k)+"="+string(v))
		return true
	})
	if len(keys) != 2 || keys[0] != `a="1"` || keys[1] != `b={"c":[1,2]}` {
		t.Fatalf("%q", keys)
	}
	if projectors.EachElement(doc, 0, func([]byte) bool { return true }) {
		t.Fatal("an object iterated as an array")
	}
}

// WalkValid finds what Valid, LocateMany and EachObjectMember find, in one
// pass, and says false where Valid does.
func TestWalkValid(t *testing.T) {
	doc := []byte(`{"xs":[{"a":"1"},{"a":"2"},3],"w":{"f":"x"},"s":true,"ys":"no array","g":[1,2]}`)
	paths := []string{"s", "xs", "w.f", "ys", "missing", "g.#", ""}
	want := make([]int, len(paths))
	projectors.LocateMany(doc, paths, want)
	var wantVals []string
	projectors.EachObjectMember(doc, want[1], func(k, v []byte) { wantVals = append(wantVals, string(k)+"="+string(v)) },
		func(obj bool) bool { wantVals = append(wantVals, fmt.Sprint(obj)); return true })
	got := make([]int, len(paths))
	var vals []string
	member := func(k, v []byte) { vals = append(vals, string(k)+"="+string(v)) }
	end := func(obj bool) bool { vals = append(vals, fmt.Sprint(obj)); return true }
	if !projectors.WalkValid(doc, paths, got, "xs", member, end) {
		t.Fatal("a valid document refused")
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || want[2] < 0 || want[4] != -1 {
		t.Fatalf("offsets %v, LocateMany says %v", got, want)
	}
	if strings.Join(vals, " ") != strings.Join(wantVals, " ") || len(vals) != 5 {
		t.Fatalf("read %q, EachObjectMember reads %q", vals, wantVals)
	}
	// A member that is not an array is not read.
	vals = nil
	projectors.WalkValid(doc, paths, got, "ys", member, end)
	if vals != nil {
		t.Fatalf("read %q", vals)
	}
	// end stops the reads, not the check.
	vals = nil
	stop := func(bool) bool { vals = append(vals, "end"); return false }
	if !projectors.WalkValid(doc, paths, got, "xs", member, stop) || len(vals) != 2 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a stop: read %q, offsets %v", vals, got)
	}
	if projectors.WalkValid([]byte(`{"xs":[{"a":1,"a":2}]}`), paths, got, "xs", member, end) {
		t.Fatal("a repeated name accepted")
	}
}
