// Package redisconn is the one way toolcanon's commands and the gateway's
// configuration say how to reach Redis: a URL (redis:// or rediss:// for
// TLS; host:port as before), the ACL user, where its password is (a file
// or an environment variable: never the URL or the command line), the TLS
// files, the topology, the key prefix and Durability. The command-line
// flags and the members of the configuration's "redis" object are two
// spellings of one Spec, named by one table (Fields); Options turns a Spec
// into redisstore.Options.
package redisconn

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore"
)

// EnvPassword is the environment variable that holds the password when
// the Spec names neither a file nor another variable.
const EnvPassword = "TOOLCANON_REDIS_PASSWORD"

// Bounds of a Spec.
const (
	MaxAddrs        = 64
	MaxReplicas     = 64
	MaxPasswordFile = 4 << 10
	MaxTimeout      = 10 * time.Minute
)

// Spec says how to reach Redis. Its zero value names no server.
type Spec struct {
	// URL is redis://[user@]host[:port][,host[:port]...][/0] (plain TCP),
	// rediss://… (TLS), or host:port[,host:port...] (plain TCP). Several
	// hosts are a cluster's seed nodes, or with SentinelMaster the
	// sentinels. A URL carrying a password is refused.
	URL string
	// User is the ACL user, when the URL names none.
	User string
	// PasswordFile is a file holding the password on one line; else it
	// comes from the variable PasswordEnv (default EnvPassword).
	PasswordFile string
	PasswordEnv  string
	// CAFile (PEM) verifies the server's certificate instead of the
	// system's roots; CertFile and KeyFile are a client certificate;
	// ServerName is the name the certificate must carry, when not the
	// host dialled. Each needs a rediss:// URL.
	CAFile, CertFile, KeyFile, ServerName string
	// Standalone skips cluster discovery, Cluster requires a cluster, and
	// SentinelMaster names the master set of the sentinels in URL; at most
	// one of them. None: the topology is discovered.
	Standalone     bool
	Cluster        bool
	SentinelMaster string
	// Prefix is the key prefix ("": canonical.DefaultPrefix).
	Prefix string
	// Durability is redisstore.Options.Durability.
	Durability redisstore.Durability
	// Timeout is redisstore.Options.Timeout (0: redisstore.DefaultTimeout).
	Timeout time.Duration

	err error // the first error a flag's value raised, kept for Validate
}

// Kind is the type of a Field's value: a JSON string, boolean or number in
// the configuration, text on the command line.
type Kind string

// The kinds of Field.
const (
	KindString   Kind = "string"
	KindBool     Kind = "bool"
	KindInt      Kind = "int"
	KindDuration Kind = "duration" // a string such as "500ms"
)

// Field is one part of a Spec, as the configuration and the command line
// name it.
type Field struct {
	Name  string // member of the configuration's "redis" object
	Flag  string // command-line flag, without its dashes
	Kind  Kind
	Usage string
	set   func(*Spec, string) error
}

var fields = []Field{
	{"url", "redis", KindString, "Redis: rediss://[user@]host:port (TLS), redis://…, or host:port[,host:port...]",
		func(s *Spec, v string) error { s.URL = v; return nil }},
	{"user", "user", KindString, "ACL user, when the URL names none",
		func(s *Spec, v string) error { s.User = v; return nil }},
	{"password_file", "password-file", KindString, "file holding the password on one line (else $" + EnvPassword + ")",
		func(s *Spec, v string) error { s.PasswordFile = v; return nil }},
	{"password_env", "password-env", KindString, "environment variable holding the password (default " + EnvPassword + ")",
		func(s *Spec, v string) error { s.PasswordEnv = v; return nil }},
	{"tls_ca_file", "tls-ca-file", KindString, "PEM file of the CA that signed the server's certificate (default: the system's roots)",
		func(s *Spec, v string) error { s.CAFile = v; return nil }},
	{"tls_cert_file", "tls-cert-file", KindString, "PEM file of a client certificate (with --tls-key-file)",
		func(s *Spec, v string) error { s.CertFile = v; return nil }},
	{"tls_key_file", "tls-key-file", KindString, "PEM file of the client certificate's key",
		func(s *Spec, v string) error { s.KeyFile = v; return nil }},
	{"tls_server_name", "tls-server-name", KindString, "name the server's certificate must carry (default: the host dialled)",
		func(s *Spec, v string) error { s.ServerName = v; return nil }},
	{"standalone", "standalone", KindBool, "skip cluster discovery (an ACL user that may not run CLUSTER)",
		func(s *Spec, v string) error { return setBool(&s.Standalone, v) }},
	{"cluster", "cluster", KindBool, "require a Redis Cluster (the topology is discovered)",
		func(s *Spec, v string) error { return setBool(&s.Cluster, v) }},
	{"sentinel_master", "sentinel-master", KindString, "master set of the Redis Sentinels the URL names",
		func(s *Spec, v string) error { s.SentinelMaster = v; return nil }},
	{"prefix", "prefix", KindString, "key prefix (default " + canonical.DefaultPrefix + ")",
		func(s *Spec, v string) error { s.Prefix = v; return nil }},
	{"durability_replicas", "durability-replicas", KindInt, "replicas that must acknowledge each change (WAIT)",
		func(s *Spec, v string) error { return setInt(&s.Durability.Replicas, v, 0, MaxReplicas) }},
	{"durability_timeout", "durability-timeout", KindDuration, "how long a change waits for them, e.g. 500ms",
		func(s *Spec, v string) error { return setDuration(&s.Durability.Timeout, v) }},
	{"durability_aof", "durability-aof", KindBool, "wait until each change is fsynced on the master and the replicas (WAITAOF)",
		func(s *Spec, v string) error { return setBool(&s.Durability.AOF, v) }},
	{"timeout", "redis-timeout", KindDuration, "bound on each store call, retries included (default 5s)",
		func(s *Spec, v string) error { return setDuration(&s.Timeout, v) }},
}

// Fields returns the parts of a Spec in their order, as the configuration
// and the flags name them.
func Fields() []Field { return append([]Field(nil), fields...) }

// Set sets the field named name (a Field.Name) from its text: "true" or
// "false", a decimal integer, a duration such as "500ms".
func (s *Spec) Set(name, value string) error {
	for _, f := range fields {
		if f.Name == name {
			if err := f.set(s, value); err != nil {
				return &Error{Field: name, Msg: err.Error()}
			}
			return nil
		}
	}
	return &Error{Msg: fmt.Sprintf("no field %q", name)}
}

func setBool(b *bool, v string) error {
	x, err := strconv.ParseBool(v)
	if err != nil {
		return errors.New("not true or false")
	}
	*b = x
	return nil
}

func setInt(i *int, v string, lo, hi int) error {
	x, err := strconv.Atoi(v)
	if err != nil || x < lo || x > hi {
		return fmt.Errorf("not an integer in [%d, %d]", lo, hi)
	}
	*i = x
	return nil
}

func setDuration(d *time.Duration, v string) error {
	x, err := time.ParseDuration(v)
	if err != nil || x <= 0 || x > MaxTimeout {
		return fmt.Errorf("not a duration in (0, %v], such as 500ms", MaxTimeout)
	}
	*d = x
	return nil
}

// errPasswordFlag refuses --password without repeating it.
var errPasswordFlag = &Error{Msg: "--password is refused: a password on the command line shows in ps output and shell history; " +
	"put it in a file ({password_file}) or in $" + EnvPassword}

// Flags registers every field of s as a flag of fs, and --password, which
// is refused. A bad value is not reported by fs.Parse, which would print
// it, but by Validate, Options and Open.
func (s *Spec) Flags(fs *flag.FlagSet) {
	for _, f := range fields {
		set := func(v string) error {
			if err := f.set(s, v); err != nil && s.err == nil {
				s.err = &Error{Field: f.Name, Msg: err.Error()}
			}
			return nil
		}
		if f.Kind == KindBool {
			fs.BoolFunc(f.Flag, f.Usage, set)
		} else {
			fs.Func(f.Flag, f.Usage, set)
		}
	}
	fs.Func("password", "refused: use --password-file or $"+EnvPassword, func(string) error {
		s.err = errPasswordFlag
		return nil
	})
}

// IsZero reports whether s names nothing: no field and no flag was set.
func (s Spec) IsZero() bool { return s == Spec{} }

// Resolve returns s with its relative file paths made relative to dir (a
// configuration file's directory).
func (s Spec) Resolve(dir string) Spec {
	for _, p := range []*string{&s.PasswordFile, &s.CAFile, &s.CertFile, &s.KeyFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	return s
}

// endpoint is what a URL says.
type endpoint struct {
	tls   bool
	user  string
	addrs []string
}

// errURLPassword is the refusal of a password in a URL. It never repeats
// the URL.
var errURLPassword = errors.New("the URL carries a password, which would show in ps output, shell history and " +
	"configuration files: write the URL without it (rediss://user@host:port) and put the password in a file " +
	"({password_file}) or in an environment variable ($" + EnvPassword + ", or the one {password_env} names)")

// parseURL reads a URL or a host:port list. Its errors repeat no part of
// the userinfo.
func parseURL(raw string) (endpoint, error) {
	var ep endpoint
	if raw == "" {
		return ep, errors.New("no Redis named: give rediss://[user@]host:port, redis://… or host:port")
	}
	for _, r := range raw {
		if r <= ' ' || r == 0x7f {
			return ep, errors.New("the URL holds a space or a control character")
		}
	}
	hosts := raw
	scheme, rest, hasScheme := strings.Cut(raw, "://")
	if hasScheme {
		switch strings.ToLower(scheme) {
		case "rediss":
			ep.tls = true
		case "redis":
		default:
			return ep, fmt.Errorf("scheme %q: use rediss:// (TLS) or redis://", scheme)
		}
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			info := rest[:at]
			if strings.Contains(info, ":") {
				return ep, errURLPassword
			}
			if strings.ContainsAny(info, "/?#") {
				return ep, errors.New("the URL's user holds / ? or #: write them percent-encoded")
			}
			user, err := url.PathUnescape(info)
			if err != nil || user == "" || !printable(user) {
				return ep, errors.New("the URL's user is empty or not printable text")
			}
			ep.user, rest = user, rest[at+1:]
		}
		authority, tail := rest, ""
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			authority, tail = rest[:i], rest[i:]
		}
		switch {
		case tail == "" || tail == "/" || tail == "/0":
		case strings.HasPrefix(tail, "?") || strings.Contains(tail, "?"):
			return ep, errors.New("the URL has a query: TLS files, the password and the topology are " +
				"given apart ({tls_ca_file}, {password_file}, {cluster}, …)")
		case strings.Contains(tail, "#"):
			return ep, errors.New("the URL has a fragment (#…)")
		default:
			return ep, fmt.Errorf("the URL's path %q names a database: the store uses database 0 and keeps apart "+
				"by key prefix ({prefix})", tail)
		}
		hosts = authority
	} else if strings.Contains(raw, "@") {
		return ep, errors.New("a user in host:port: write redis://user@host:port (rediss:// for TLS), or use {user}")
	} else if strings.ContainsAny(raw, "/?#") {
		return ep, errors.New("not a host:port list, nor a redis:// or rediss:// URL")
	}
	for _, h := range strings.Split(hosts, ",") {
		addr, err := hostPort(h)
		if err != nil {
			return ep, err
		}
		ep.addrs = append(ep.addrs, addr)
	}
	if len(ep.addrs) > MaxAddrs {
		return ep, fmt.Errorf("%d addresses: at most %d", len(ep.addrs), MaxAddrs)
	}
	return ep, nil
}

// hostPort checks one host[:port], adding the default port 6379.
func hostPort(h string) (string, error) {
	if h == "" {
		return "", errors.New("an empty address: write host:port, separated by commas")
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		if strings.Count(h, ":") > 0 && !strings.HasPrefix(h, "[") || strings.HasPrefix(h, "[") && !strings.HasSuffix(h, "]") {
			return "", fmt.Errorf("%q is not host:port (an IPv6 address is written [::1]:6379)", h)
		}
		host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), "6379"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "", fmt.Errorf("%q: the port is not a number in 1..65535", h)
	}
	if host == "" || strings.ContainsAny(host, "[]@/") || !printable(host) {
		return "", fmt.Errorf("%q: no host", h)
	}
	return net.JoinHostPort(host, port), nil
}

func printable(s string) bool {
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return false
		}
	}
	return true
}

// Error is a Spec that cannot be used: the field at fault, what is wrong,
// and how to put it right. It is INVALID_ARGUMENT (canonical.CodeOf).
type Error struct {
	Field string // a Field.Name; "" when no one field is at fault
	Msg   string // may name fields as {name}, which Text renders
}

// Error renders the error naming fields as the configuration does
// ("tls_ca_file").
func (e *Error) Error() string { return e.Text(false) }

// Text renders the error naming fields as flags (--tls-ca-file) or as the
// configuration's members (tls_ca_file).
func (e *Error) Text(flags bool) string {
	name := func(f Field) string {
		if flags {
			return "--" + f.Flag
		}
		return f.Name
	}
	msg := e.Msg
	prefix := ""
	for _, f := range fields {
		msg = strings.ReplaceAll(msg, "{"+f.Name+"}", name(f))
		if f.Name == e.Field {
			prefix = name(f) + ": "
		}
	}
	return prefix + msg
}

// Unwrap relates the error to INVALID_ARGUMENT.
func (e *Error) Unwrap() error {
	return &canonical.Error{Code: canonical.CodeInvalidArgument, Msg: e.Error()}
}

// Validate checks s without reading a file or the environment.
func (s Spec) Validate() error {
	_, err := s.check()
	return err
}

// fieldErr is an *Error of field.
func fieldErr(field, format string, args ...any) *Error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, args...)}
}

func (s Spec) check() (endpoint, error) {
	if s.err != nil {
		return endpoint{}, s.err
	}
	ep, err := parseURL(s.URL)
	if err != nil {
		return ep, &Error{Field: "url", Msg: err.Error()}
	}
	if s.User != "" {
		if ep.user != "" && ep.user != s.User {
			return ep, fieldErr("user", "the URL names another user; give one")
		}
		if !printable(s.User) || strings.ContainsAny(s.User, " ") {
			return ep, fieldErr("user", "not printable text without spaces")
		}
		ep.user = s.User
	}
	switch {
	case s.PasswordFile != "" && s.PasswordEnv != "":
		return ep, fieldErr("password_env", "the password comes from a file ({password_file}) or a variable, not both")
	case s.PasswordEnv != "" && !envName(s.PasswordEnv):
		return ep, fieldErr("password_env", "%q is not a variable name ([A-Z_][A-Z0-9_]*)", s.PasswordEnv)
	}
	if !ep.tls {
		for _, f := range []struct{ name, v string }{{"tls_ca_file", s.CAFile}, {"tls_cert_file", s.CertFile},
			{"tls_key_file", s.KeyFile}, {"tls_server_name", s.ServerName}} {
			if f.v != "" {
				return ep, fieldErr(f.name, "needs TLS: write the URL as rediss://host:port")
			}
		}
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return ep, fieldErr(map[bool]string{true: "tls_key_file", false: "tls_cert_file"}[s.CertFile != ""],
			"a client certificate needs both {tls_cert_file} and {tls_key_file}")
	}
	if s.ServerName != "" && (!printable(s.ServerName) || strings.ContainsAny(s.ServerName, " /:@")) {
		return ep, fieldErr("tls_server_name", "not a host name")
	}
	n := 0
	for _, b := range []bool{s.Standalone, s.Cluster, s.SentinelMaster != ""} {
		if b {
			n++
		}
	}
	if n > 1 {
		return ep, &Error{Msg: "{standalone}, {cluster} and {sentinel_master} exclude each other"}
	}
	if s.SentinelMaster != "" && (!printable(s.SentinelMaster) || strings.ContainsAny(s.SentinelMaster, " ") || len(s.SentinelMaster) > 256) {
		return ep, fieldErr("sentinel_master", "not a master set name")
	}
	if s.Standalone && len(ep.addrs) > 1 {
		return ep, fieldErr("standalone", "names one server, and the URL names several")
	}
	if _, err := canonical.NewKeys(s.Prefix); err != nil {
		var ce *canonical.Error
		if errors.As(err, &ce) {
			err = errors.New(ce.Msg)
		}
		return ep, fieldErr("prefix", "%v", err)
	}
	d := s.Durability
	switch {
	case d.Replicas > 0 || d.AOF:
		if d.Timeout < time.Millisecond {
			return ep, fieldErr("durability_timeout", "required with {durability_replicas} or {durability_aof}: "+
				"how long each change waits, at least 1ms (e.g. 500ms)")
		}
		if t := s.timeout(); d.Timeout >= t {
			return ep, fieldErr("durability_timeout", "%v must be below the store's timeout %v ({timeout})", d.Timeout, t)
		}
	case d.Timeout != 0:
		return ep, fieldErr("durability_timeout", "without {durability_replicas} or {durability_aof} it waits for nothing")
	}
	return ep, nil
}

func (s Spec) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return redisstore.DefaultTimeout
}

func envName(s string) bool {
	if s == "" || len(s) > 128 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// String names the server for messages: the URL's scheme, user and hosts
// (a host:port list as it is), and the sentinels' master set. It holds no secret: a URL with a password
// is refused, and then named without its user information.
func (s Spec) String() string {
	ep, err := parseURL(s.URL)
	if err != nil {
		if strings.Contains(s.URL, "@") {
			return "the URL given (not repeated: it may carry a password)"
		}
		return strconv.Quote(s.URL)
	}
	var b strings.Builder
	if strings.Contains(s.URL, "://") || s.User != "" {
		b.WriteString(map[bool]string{true: "rediss://", false: "redis://"}[ep.tls])
	}
	if u := cmpOr(s.User, ep.user); u != "" {
		b.WriteString(url.PathEscape(u) + "@")
	}
	b.WriteString(strings.Join(ep.addrs, ","))
	if s.SentinelMaster != "" {
		b.WriteString(" (sentinel master " + s.SentinelMaster + ")")
	}
	return b.String()
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
