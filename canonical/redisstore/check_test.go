package redisstore

import (
	"strings"
	"testing"
)

func TestParseInfo(t *testing.T) {
	m := parseInfo("# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n\r\n# Replication\r\nrole:master\r\n" +
		"connected_slaves:1\r\nslave0:ip=127.0.0.1,port=6380,state=online\r\nnot a field\r\n:no key\r\n")
	want := map[string]string{"redis_version": "7.0.15", "redis_mode": "standalone", "role": "master",
		"connected_slaves": "1", "slave0": "ip=127.0.0.1,port=6380,state=online"}
	if len(m) != len(want) {
		t.Fatalf("parsed %v, want %v", m, want)
	}
	for k, v := range want {
		if m[k] != v {
			t.Fatalf("%s = %q, want %q", k, m[k], v)
		}
	}
}

// FuzzParseInfo: whatever a server (or something posing as one) sends, the
// parser does not panic, and every field it returns is one line of the
// input, split at its first colon.
func FuzzParseInfo(f *testing.F) {
	f.Add("# Server\r\nredis_version:7.0.15\r\n")
	f.Add("connected_slaves:0\nrole:master\n#x:y\n::\n")
	f.Add("a:b:c\r\n\r\n:\r\nk:")
	f.Fuzz(func(t *testing.T, text string) {
		for k, v := range parseInfo(text) {
			if k == "" || strings.Contains(k, ":") || strings.HasPrefix(k, "#") {
				t.Fatalf("key %q from %q", k, text)
			}
			if !strings.Contains(text, k+":"+v) {
				t.Fatalf("field %q:%q is not a line of %q", k, v, text)
			}
		}
	})
}
