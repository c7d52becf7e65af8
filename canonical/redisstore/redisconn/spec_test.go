package redisconn

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		in    string
		tls   bool
		user  string
		addrs []string
	}{
		{"127.0.0.1:6379", false, "", []string{"127.0.0.1:6379"}},
		{"10.0.0.5:7000,10.0.0.6:7000", false, "", []string{"10.0.0.5:7000", "10.0.0.6:7000"}},
		{"localhost", false, "", []string{"localhost:6379"}},
		{"[::1]:6380", false, "", []string{"[::1]:6380"}},
		{"redis://h", false, "", []string{"h:6379"}},
		{"redis://h:1/", false, "", []string{"h:1"}},
		{"redis://h:1/0", false, "", []string{"h:1"}},
		{"REDISS://toolcanon@redis.example.com:6380", true, "toolcanon", []string{"redis.example.com:6380"}},
		{"rediss://w%40x@a:1,b:2,[::1]", true, "w@x", []string{"a:1", "b:2", "[::1]:6379"}},
	} {
		ep, err := parseURL(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if ep.tls != c.tls || ep.user != c.user || !slices.Equal(ep.addrs, c.addrs) {
			t.Errorf("%q: %+v, want tls %v user %q addrs %v", c.in, ep, c.tls, c.user, c.addrs)
		}
	}
}

func TestParseURLRefusals(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "no Redis named"},
		{"rediss://toolcanon:s3cr3t@h:6380", "carries a password"},
		{"redis://:s3cr3t@h", "carries a password"},
		{"http://h:1", `scheme "http"`},
		{"unix:///run/redis.sock", `scheme "unix"`},
		{"redis://h:1/2", "names a database"},
		{"redis://h:1?ssl_cert_reqs=none", "has a query"},
		{"redis://h:1/#x", "fragment"},
		{"redis://@h:1", "user is empty"},
		{"user@h:1", "write redis://user@host:port"},
		{"h:1, h:2", "space"},
		{"h:0", "not a number in 1..65535"},
		{"h:65536", "not a number in 1..65535"},
		{"h:+1", "not a number"},
		{"h:x", "not a number"},
		{":6379", "no host"},
		{"h:1,,h:2", "an empty address"},
		{"::1", "IPv6"},
		{"[::1", "IPv6"},
		{"h/x", "not a host:port list"},
	} {
		_, err := parseURL(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error saying %q", c.in, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%q: the error repeats the password: %v", c.in, err)
		}
	}
}

func TestValidateRefusals(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		s    Spec
		want string
	}{
		{Spec{URL: "redis://h:1", CAFile: "ca.pem"}, "tls_ca_file: needs TLS: write the URL as rediss://"},
		{Spec{URL: "h:1", ServerName: "x"}, "tls_server_name: needs TLS"},
		{Spec{URL: "rediss://h:1", CertFile: "c.pem"}, "both tls_cert_file and tls_key_file"},
		{Spec{URL: "rediss://h:1", ServerName: "a b"}, "not a host name"},
		{Spec{URL: "redis://u@h:1", User: "v"}, "user: the URL names another user"},
		{Spec{URL: "h:1", PasswordFile: filepath.Join(dir, "p"), PasswordEnv: "X"}, "not both"},
		{Spec{URL: "h:1", PasswordEnv: "lower"}, "not a variable name"},
		{Spec{URL: "h:1", Standalone: true, Cluster: true}, "exclude each other"},
		{Spec{URL: "h:1", Cluster: true, SentinelMaster: "m"}, "exclude each other"},
		{Spec{URL: "h:1,h:2", Standalone: true}, "names several"},
		{Spec{URL: "h:1", Prefix: "a b"}, "prefix"},
		{Spec{URL: "h:1", Durability: durability(1, 0, false)}, "durability_timeout: required with durability_replicas or durability_aof"},
		{Spec{URL: "h:1", Durability: durability(0, 0, true)}, "durability_timeout: required with durability_replicas or durability_aof"},
		{Spec{URL: "h:1", Durability: durability(0, time.Second, false)}, "waits for nothing"},
		{Spec{URL: "h:1", Durability: durability(1, 5*time.Second, false)}, "below the store's timeout 5s"},
		{Spec{URL: "h:1", Timeout: time.Second, Durability: durability(1, time.Second, false)}, "below the store's timeout 1s"},
	} {
		err := c.s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error saying %q", c.s, err, c.want)
			continue
		}
		if canonical.CodeOf(err) != canonical.CodeInvalidArgument {
			t.Errorf("%+v: code %s, want INVALID_ARGUMENT", c.s, canonical.CodeOf(err))
		}
	}
	ok := Spec{URL: "rediss://u@h:1", User: "u", CAFile: "ca.pem", CertFile: "c", KeyFile: "k", ServerName: "redis.internal",
		SentinelMaster: "mymaster", Prefix: "tc2", Timeout: 2 * time.Second, Durability: durability(1, time.Second, true)}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
}

func durability(n int, d time.Duration, aof bool) redisstore.Durability {
	return redisstore.Durability{Replicas: n, Timeout: d, AOF: aof}
}

// The flags and the configuration's members are one table: every field
// sets through both, and a bad value is reported by Validate, never echoed
// by the flag package.
func TestFlagsAndFieldsAreOneTable(t *testing.T) {
	var s Spec
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	s.Flags(fs)
	args := []string{"--redis", "rediss://a@h:1", "--user", "a", "--password-env", "PW", "--tls-ca-file", "ca",
		"--tls-cert-file", "c", "--tls-key-file", "k", "--tls-server-name", "n", "--cluster", "--prefix", "p",
		"--durability-replicas", "2", "--durability-timeout", "250ms", "--durability-aof", "--redis-timeout", "3s"}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	var viaSet Spec
	for _, kv := range [][2]string{{"url", "rediss://a@h:1"}, {"user", "a"}, {"password_env", "PW"}, {"tls_ca_file", "ca"},
		{"tls_cert_file", "c"}, {"tls_key_file", "k"}, {"tls_server_name", "n"}, {"cluster", "true"}, {"prefix", "p"},
		{"durability_replicas", "2"}, {"durability_timeout", "250ms"}, {"durability_aof", "true"}, {"timeout", "3s"}} {
		if err := viaSet.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if s != viaSet {
		t.Fatalf("flags gave %+v, Set %+v", s, viaSet)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, f := range Fields() {
		if fs.Lookup(f.Flag) == nil {
			t.Errorf("field %s has no flag --%s", f.Name, f.Flag)
		}
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--password", "hunter2-secret"}, "--password is refused: a password on the command line shows in ps output and shell history; put it in a file (--password-file)"},
		{[]string{"--redis", "redis://h", "--tls-cert-file", "c"}, "--tls-cert-file: needs TLS"},
		{[]string{"--redis", "rediss://h", "--tls-cert-file", "c"}, "--tls-key-file: a client certificate needs both --tls-cert-file and --tls-key-file"},
		{[]string{"--durability-replicas", "many"}, "--durability-replicas: not an integer in [0, 64]"},
		{[]string{"--durability-timeout", "-1s"}, "not a duration"},
		{[]string{"--redis", "redis://u:hunter2-secret@h"}, "carries a password"},
	} {
		var s Spec
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		s.Flags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%v: the flag package saw %v", c.args, err)
		}
		err := s.Validate()
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(e.Text(true), c.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%v: %v, want %q and no password", c.args, err, c.want)
		}
		if s.IsZero() {
			t.Errorf("%v: a Spec with a flag set is zero", c.args)
		}
		if str := s.String(); strings.Contains(str, "hunter2") {
			t.Errorf("%v: String repeats the password: %s", c.args, str)
		}
	}
	if !(Spec{}).IsZero() {
		t.Error("the zero Spec is not zero")
	}
}

func TestOptionsReadsThePasswordFromAFileOrTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvPassword, "from-default-env")
	t.Setenv("OTHER_PW", "from-other-env")
	for _, c := range []struct {
		s    Spec
		want string
	}{
		{Spec{URL: "h:1"}, "from-default-env"},
		{Spec{URL: "h:1", PasswordFile: pwFile}, "from-file"},
		{Spec{URL: "h:1", PasswordEnv: "OTHER_PW"}, "from-other-env"},
	} {
		o, err := c.s.Options()
		if err != nil || o.Password != c.want {
			t.Errorf("%+v: %q, %v; want %q", c.s, o.Password, err, c.want)
		}
	}
	two := filepath.Join(dir, "two")
	os.WriteFile(two, []byte("a\nb\n"), 0o600)
	big := filepath.Join(dir, "big")
	os.WriteFile(big, bytes.Repeat([]byte("x"), MaxPasswordFile+1), 0o600)
	for _, c := range []struct {
		s    Spec
		want string
	}{
		{Spec{URL: "h:1", PasswordEnv: "UNSET_PW_VARIABLE"}, "password_env: $UNSET_PW_VARIABLE is not set"},
		{Spec{URL: "h:1", PasswordFile: two}, "on one line"},
		{Spec{URL: "h:1", PasswordFile: big}, "is over 4096 bytes"},
		{Spec{URL: "h:1", PasswordFile: filepath.Join(dir, "none")}, "cannot read"},
		{Spec{URL: "rediss://h:1", CAFile: pwFile}, "holds no PEM certificate"},
		{Spec{URL: "rediss://h:1", CertFile: pwFile, KeyFile: pwFile}, "not a certificate and its key"},
	} {
		_, err := c.s.Options()
		if err == nil || !strings.Contains(err.Error(), c.want) || canonical.CodeOf(err) != canonical.CodeInvalidArgument {
			t.Errorf("%+v: %v, want INVALID_ARGUMENT saying %q", c.s, err, c.want)
		}
	}
	o, err := Spec{URL: "rediss://u@h:1,h2:2", ServerName: "n", Standalone: false, SentinelMaster: "m"}.Options()
	if err != nil {
		t.Fatal(err)
	}
	if o.TLS == nil || o.TLS.ServerName != "n" || o.TLS.MinVersion == 0 || o.TLS.InsecureSkipVerify || o.Username != "u" ||
		!slices.Equal(o.Addrs, []string{"h:1", "h2:2"}) || o.SentinelMaster != "m" {
		t.Fatalf("options %+v", o)
	}
}

func TestResolveAnchorsRelativeFiles(t *testing.T) {
	s := Spec{PasswordFile: "pw", CAFile: "/etc/ca.pem", CertFile: "tls/c.pem", KeyFile: "k.pem"}.Resolve("/srv/gw")
	if s.PasswordFile != "/srv/gw/pw" || s.CAFile != "/etc/ca.pem" || s.CertFile != "/srv/gw/tls/c.pem" || s.KeyFile != "/srv/gw/k.pem" {
		t.Fatalf("%+v", s)
	}
}

func TestStringNamesTheServerWithoutSecrets(t *testing.T) {
	for _, c := range []struct {
		s    Spec
		want string
	}{
		{Spec{URL: "10.0.0.5:6379"}, "10.0.0.5:6379"},
		{Spec{URL: "redis://10.0.0.5"}, "redis://10.0.0.5:6379"},
		{Spec{URL: "rediss://toolcanon@r.example.com:6380"}, "rediss://toolcanon@r.example.com:6380"},
		{Spec{URL: "a:1,b:2", User: "w", SentinelMaster: "mymaster"}, "redis://w@a:1,b:2 (sentinel master mymaster)"},
		{Spec{URL: "redis://u:pw@h"}, "not repeated"},
	} {
		if got := c.s.String(); got != c.want && !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.s, got, c.want)
		}
	}
}

// FuzzParseURL: whatever the text, the parser does not panic; what it
// accepts names 1..MaxAddrs host:port pairs that parse again to
// themselves, and no error or String repeats the part of a URL with a
// password before its host.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"127.0.0.1:6379", "rediss://toolcanon@redis.example.com:6380", "redis://u:p@h:1/0",
		"a:1,b:2,[::1]", "redis://h?x=1", "rediss://%zz@h", "redis://h:1/#", "[::1]", "h:65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		ep, err := parseURL(raw)
		// What a user may have meant as a password: after the scheme,
		// between the first colon and the last @. Whether a message
		// repeats it cannot be told from the text alone (a password of
		// "000\"" is in any message that quotes a scheme "000"), so the
		// same text is parsed again with a marker written nowhere else in
		// the password's place: it must be refused, and no error or
		// String may hold the marker.
		rest := raw
		if _, r, ok := strings.Cut(raw, "://"); ok {
			rest = r
		}
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			if user, pw, ok := strings.Cut(rest[:at], ":"); ok {
				const marker = "pwMARKER7f3a"
				marked := raw[:len(raw)-len(rest)] + user + ":" + marker + rest[at:]
				_, merr := parseURL(marked)
				if merr == nil {
					t.Fatalf("%q: a URL with a password was accepted", marked)
				}
				if strings.Contains(merr.Error(), marker) || strings.Contains(Spec{URL: marked}.String(), marker) {
					t.Fatalf("%q: the error or String repeats the password: %v", marked, merr)
				}
				if err == nil {
					t.Fatalf("%q: a URL with a password %q was accepted", raw, pw)
				}
			}
		}
		if err != nil {
			return
		}
		if len(ep.addrs) == 0 || len(ep.addrs) > MaxAddrs {
			t.Fatalf("%q: %d addresses", raw, len(ep.addrs))
		}
		for _, a := range ep.addrs {
			again, err := hostPort(a)
			if err != nil || again != a {
				t.Fatalf("%q: address %q reads back as %q, %v", raw, a, again, err)
			}
		}
	})
}
