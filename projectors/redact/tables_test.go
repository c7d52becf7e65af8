package redact

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Each proof, entry by entry: a value of its shape is kept in its context
// and masked in another, and a value of another shape is masked in it.
func TestProofsEntryByEntry(t *testing.T) {
	cases := map[string][]struct{ kept, masked string }{
		"digest after its algorithm": {
			{"image sha256:0d5c2ab4f3e8b1a9c7d6e5f40312a1b2c3d4e5f60718293a4b5c6d7e8f901234", "image 0d5c2ab4f3e8b1a9c7d6e5f40312a1b2c3d4e5f60718293a4b5c6d7e8f901234"},
			{"checksum md5 1c87409cd75d167853d006459185d401 ok", "checksum of 1c87409cd75d167853d006459185d401 ok"},
		},
		"subresource integrity":  {{"integrity=sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC", "integrity=sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4Jw"}},
		"Go checksum":            {{"x/net v0.25.0 h1:d/OCCoBEUq33pjydKrGQhw7IlUPI2Oylr+8qLx49kac=", "x/net v0.25.0 h2:d/OCCoBEUq33pjydKrGQhw7IlUPI2Oylr+8qLx49kac="}},
		"ssh key fingerprint":    {{"fingerprint is SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8.", "key is SHA1:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8."}},
		"checksum header":        {{`ETag: "e474def8bcb216f0ed162edf06727c54"`, `X-Request: "e474def8bcb216f0ed162edf06727c54"`}},
		"base64 checksum header": {{"Content-MD5: 1B2M2Y8AsgTpgAmY7PhCfg==", "Content-Type: 1B2M2Y8AsgTpgAmY7PhCfg=="}},
		"checksum file line":     {{"ce257ad4f2b57f63d654f75852777dc278aaf6301d1a619588096b35bc4986e1  app.tar.gz", "ce257ad4f2b57f63d654f75852777dc278aaf6301d1a619588096b35bc4986e1 app.tar.gz"}},
		"commit in a git context": {
			{"commit 28efa20124d6d003a6630d95495d395dc3289858", "token 28efa20124d6d003a6630d95495d395dc3289858"},
			{"HEAD is now at 9132b5958b11 fix", "head is at 9132b5958b11 fix"},
		},
		"key id or fingerprint":  {{"gpg: using RSA key 4AEE18F83AFDEB23", "gpg: using the 4AEE18F83AFDEB23"}},
		"ssh public key":         {{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq7Lm2vK9tR4xW1nB8yC3dF6hJ0sG5aE2uQ", "ssh-ed25519 QUFBQUMzTnphQzFsWkRJMU5URTVBQUFBSUhxN0xtMnZLOXRSNHhXMW5COHlD"}},
		"W3C traceparent":        {{"traceparent: 00-b6403f3d9cf02eb7ba30357967f196ce-7f3a9c2e1b4d6058-01", "tracestate: 00-b6403f3d9cf02eb7ba30357967f196ce-7f3a9c2e1b4d6058-01"}},
		"OpenTelemetry trace id": {{"trace_id=e5ab768873f4f88e5690e80b0c4824c5", "request_id=e5ab768873f4f88e5690e80b0c4824c5"}},
		"OpenTelemetry span id":  {{`"spanId":"7f3a9c2e1b4d6058"`, `"nonce":"7f3a9c2e1b4d6058"`}},
	}
	for _, p := range proofsTable {
		cs, ok := cases[p.name]
		if !ok {
			t.Errorf("proof %q has no test", p.name)
			continue
		}
		for _, c := range cs {
			if got := String(c.kept); got != c.kept {
				t.Errorf("%s: %q\n changed to %q", p.name, c.kept, got)
			}
			if got := String(c.masked); got == c.masked {
				t.Errorf("%s: %q kept, out of its context or shape", p.name, c.masked)
			}
		}
		delete(cases, p.name)
	}
	for name := range cases {
		t.Errorf("a case for %q, which is no proof", name)
	}
}

// Each credential word names a credential in a key, whatever words
// surround it; a setting word after it makes the key a setting; "key"
// names one after each of its qualifiers.
func TestCredentialWordsEntryByEntry(t *testing.T) {
	for _, w := range slices.Sorted(maps.Keys(credentialWords)) {
		for _, key := range []string{w, "admin_" + w, "x-" + w, "db." + w, strings.ToUpper(w) + "_VALUE"} {
			if c := classifyKey([]byte(key)); c != kvSecret && c != kvCookie {
				t.Errorf("%q (word %q): class %d, not a credential", key, w, c)
			}
		}
		if got := String(w + "=Zq9v!k2LmP next"); !strings.HasPrefix(got, w+"=<SECRET>") {
			t.Errorf("%q", got)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(settingWords)) {
		for _, key := range []string{"password_" + s, "token-" + s, s + "_secret"} {
			if c := classifyKey([]byte(key)); c != kvNone {
				t.Errorf("%q (setting word %q): class %d", key, s, c)
			}
		}
	}
	for _, q := range slices.Sorted(maps.Keys(keyQualifiers)) {
		keys := []string{q + "_key", q + "Key", q + "-keys"}
		if q == "connection" {
			keys = []string{"connection_string", "ConnectionString"}
		}
		for _, key := range keys {
			if c := classifyKey([]byte(key)); c != kvSecret {
				t.Errorf("%q (qualifier %q): class %d", key, q, c)
			}
		}
	}
	// Substrings never count: these hold a setting or a credential word
	// only inside other words.
	for key, want := range map[string]kvClass{"admin_password": kvSecret, "minimum_password": kvSecret, "maxed_token": kvSecret,
		"bypass": kvNone, "compass_reading": kvNone, "tokenizer": kvNone, "secretary": kvNone, "partition_key": kvNone, "monkey": kvNone} {
		if c := classifyKey([]byte(key)); c != want {
			t.Errorf("%q: class %d, want %d", key, c, want)
		}
	}
}

// Each login command masks its account and password arguments.
func TestLoginCommandsEntryByEntry(t *testing.T) {
	examples := map[string]string{
		"add_user":        "rabbitmqctl add_user jdoe Zq9v!k2LmP",
		"change_password": "rabbitmqctl change_password jdoe Zq9v!k2LmP",
		"isql":            "isql -v MyDSN jdoe Zq9v!k2LmP",
		"http-basic.":     "poetry config http-basic.repo jdoe Zq9v!k2LmP",
		"net":             "net user jdoe Zq9v!k2LmP /add",
		"htpasswd":        "htpasswd -b -c /etc/nginx/.htpasswd jdoe Zq9v!k2LmP",
	}
	for _, c := range loginCommands {
		ex, ok := examples[c.cmd]
		if !ok {
			t.Errorf("login command %q has no example", c.cmd)
			continue
		}
		got := String(ex)
		if strings.Contains(got, "jdoe") || strings.Contains(got, "Zq9v!k2LmP") || !strings.Contains(got, "<USER> <SECRET>") {
			t.Errorf("%s: %q -> %q", c.cmd, ex, got)
		}
	}
	if got := String("htpasswd -c /etc/nginx/.htpasswd jdoe"); got != "htpasswd -c /etc/nginx/.htpasswd jdoe" {
		t.Errorf("htpasswd without -b takes no password: %q", got)
	}
}

// Each vendor prefix makes a value a secret wherever it stands, even in a
// position that would prove a digest public; too short a rest does not.
func TestVendorPrefixesEntryByEntry(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, v := range vendorPrefixes {
		alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
		if v.hex {
			alphabet = "0123456789abcdef"
		}
		if v.p[0] == 'A' && len(v.p) == 4 && v.p != "AIza" {
			alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
		}
		rest := make([]byte, v.rest+4)
		for i := range rest {
			rest[i] = alphabet[r.IntN(len(alphabet))]
		}
		value := v.p + string(rest)
		for _, line := range []string{"using " + value + " now", "sha256:" + value} {
			rw := &rewriter{src: []byte(line)}
			redactGenerated(rw)
			if len(rw.spans) != 1 || rw.spans[0].kind != kSecret || string(rw.src[rw.spans[0].start:rw.spans[0].end]) != value {
				t.Errorf("%q: %+v", line, rw.spans)
			}
		}
		if vendorKey([]byte(v.p+string(rest[:max(0, v.rest-5)]))) && len(v.p)+v.rest-5 >= 12 {
			t.Errorf("%q with a short rest is a vendor key", v.p)
		}
	}
}
