package lua_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/lua"
)

// Every shipped script expands whole: no include line is left, and the
// record's layout, generated into format.lib, is in each script that
// includes it.
func TestShippedScriptsExpand(t *testing.T) {
	entries, err := lua.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	lib, err := lua.FS.ReadFile("format.lib")
	if err != nil {
		t.Fatal(err)
	}
	including := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".lua") {
			continue
		}
		raw, _ := lua.FS.ReadFile(e.Name())
		src := lua.Source(e.Name())
		if src == "" {
			t.Fatalf("%s does not expand", e.Name())
		}
		if strings.HasPrefix(src, "-- #include ") || strings.Contains(src, "\n-- #include ") {
			t.Errorf("%s: an include line is left", e.Name())
		}
		if strings.Contains(string(raw), "-- #include format.lib\n") {
			including++
			if !strings.Contains(src, string(lib)) {
				t.Errorf("%s: format.lib is not in the expanded script", e.Name())
			}
		} else if src != string(raw) {
			t.Errorf("%s: a script without includes changed", e.Name())
		}
	}
	if including < 3 {
		t.Errorf("%d scripts include format.lib; begin, complete and abandon do", including)
	}
}

func TestExpand(t *testing.T) {
	files := map[string]string{
		"a.lib":      "local a = 1\n",
		"noeol.lib":  "local b = 2",
		"nested.lib": "x\n-- #include a.lib\n",
	}
	read := func(name string) ([]byte, error) {
		s, ok := files[name]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(s), nil
	}
	for _, c := range []struct{ src, want, err string }{
		{"-- header\n-- #include a.lib\nreturn a\n", "-- header\nlocal a = 1\nreturn a\n", ""},
		{"-- #include noeol.lib\nreturn b\n", "local b = 2\nreturn b\n", ""},
		{"-- #include a.lib", "local a = 1\n", ""},
		{"return 1 -- #include a.lib\n", "return 1 -- #include a.lib\n", ""}, // not a whole line
		{"--  #include a.lib\n", "--  #include a.lib\n", ""},                 // not the directive
		{"-- #include missing.lib\n", "", "missing.lib"},
		{"-- #include nested.lib\n", "", "do not include"},
		{"-- #include ../a.lib\n", "", "plain"},
		{"-- #include a.lua\n", "", "plain"},
		{"-- #include .lib\n", "", "plain"},
	} {
		got, err := lua.Expand(c.src, read)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("Expand(%q) = %q, %v; want an error with %q", c.src, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("Expand(%q) = %q, %v; want %q", c.src, got, err, c.want)
		}
	}
	if _, err := lua.Expand("-- #include missing.lib\n", read); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist wrapped", err)
	}
}

// FuzzExpand: expansion never panics, and text without the directive comes
// back unchanged.
func FuzzExpand(f *testing.F) {
	f.Add("-- #include a.lib\nreturn a\n")
	f.Add("plain text\n")
	f.Add("-- #include \n")
	read := func(name string) ([]byte, error) {
		if name == "a.lib" {
			return []byte("local a = 1\n"), nil
		}
		return nil, fs.ErrNotExist
	}
	f.Fuzz(func(t *testing.T, src string) {
		got, err := lua.Expand(src, read)
		if !strings.Contains(src, "-- #include ") && (err != nil || got != src) {
			t.Fatalf("Expand(%q) = %q, %v", src, got, err)
		}
		if err == nil && strings.Contains(got, "\n-- #include a.lib\n") {
			t.Fatalf("Expand(%q) left an include line: %q", src, got)
		}
	})
}
