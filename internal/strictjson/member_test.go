package strictjson

import "testing"

func TestMember(t *testing.T) {
	doc := []byte(` {"a":1, "input" : {"q":"x,}","n":[1,{"input":2}]} ,"z":"input","t":true,"e":[]}`)
	for name, want := range map[string]string{
		"a": "1", "input": `{"q":"x,}","n":[1,{"input":2}]}`, "z": `"input"`, "t": "true", "e": "[]",
	} {
		got, ok := Member(doc, name)
		if !ok || string(got) != want {
			t.Errorf("Member(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	if _, ok := Member(doc, "q"); ok {
		t.Errorf("Member found a nested member")
	}
	if _, ok := Member([]byte(`[1]`), "a"); ok {
		t.Errorf("Member found a member in an array")
	}
}

func FuzzMember(f *testing.F) {
	f.Add([]byte(`{"input":{"a":[1,2,"]"]},"b":null}`), "input")
	f.Fuzz(func(t *testing.T, b []byte, name string) {
		if Check(b, MaxDepth) != nil {
			return
		}
		if v, ok := Member(b, name); ok && !Valid(v) {
			t.Fatalf("Member(%q, %q) = %q, not a JSON value", b, name, v)
		}
	})
}
