package projectors_test

import (
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

func TestLocateManyVisit(t *testing.T) {
	doc := []byte(`{"xs":[{"a":"1"},{"a":"2"},3],"w":{"f":"x"},"s":true,"ys":"no array"}`)
	paths := []string{"s", "xs", "w.f", "ys", "missing"}
	want := make([]int, len(paths))
	projectors.LocateMany(doc, paths, want)
	got := make([]int, len(paths))
	var vals []string
	read := func(start int) int {
		return projectors.EachObjectMemberEnd(doc, start, func(k, v []byte) { vals = append(vals, string(v)) }, func(bool) bool { return true })
	}
	if !projectors.LocateManyVisit(doc, paths, got, "xs", read) {
		t.Fatal("walk stopped")
	}
	for i := range paths {
		if got[i] != want[i] {
			t.Fatalf("%s at %d, LocateMany says %d", paths[i], got[i], want[i])
		}
	}
	if len(vals) != 2 || vals[0] != `"1"` || vals[1] != `"2"` {
		t.Fatalf("read %q", vals)
	}
	// A member that is not an array is not read.
	vals = nil
	projectors.LocateManyVisit(doc, paths, got, "ys", read)
	if vals != nil {
		t.Fatalf("read %q", vals)
	}
	// A read that stops stops the walk: neither the array read nor what
	// follows is found.
	stop := func(start int) int {
		return projectors.EachObjectMemberEnd(doc, start, func(k, v []byte) {}, func(bool) bool { return false })
	}
	if projectors.LocateManyVisit(doc, paths, got, "xs", stop) || got[0] != -1 || got[1] != -1 {
		t.Fatalf("stopped walk: %v", got)
	}
}
