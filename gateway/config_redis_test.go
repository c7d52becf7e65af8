package gateway_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore/redisconn"
	"github.com/toolcanon/toolcanon/gateway"
)

// withRedis is goodConfig with a "redis" object.
func withRedis(t *testing.T, redis string) string {
	t.Helper()
	return edit(t, `"progress": {"threshold": 3},`, `"progress": {"threshold": 3},
  "redis": `+redis+`,`)
}

// The "redis" object is a redisconn.Spec, named as its flags are, with its
// files relative to the configuration's directory.
func TestConfigRedisIsAConnectionSpec(t *testing.T) {
	doc := withRedis(t, `{"url": "rediss://toolcanon@redis.example.com:6380", "password_file": "secrets/redis",
    "tls_ca_file": "/etc/ssl/redis-ca.pem", "tls_cert_file": "client.pem", "tls_key_file": "client.key",
    "tls_server_name": "redis.internal", "prefix": "tc2", "durability_replicas": 1, "durability_timeout": "500ms",
    "durability_aof": true, "timeout": "3s", "standalone": true}`)
	cfg, err := gateway.ParseConfig("/etc/toolcanon/gateway.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := redisconn.Spec{URL: "rediss://toolcanon@redis.example.com:6380", PasswordFile: "/etc/toolcanon/secrets/redis",
		CAFile: "/etc/ssl/redis-ca.pem", CertFile: "/etc/toolcanon/client.pem", KeyFile: "/etc/toolcanon/client.key",
		ServerName: "redis.internal", Prefix: "tc2", Timeout: 3 * time.Second, Standalone: true}
	want.Durability.Replicas, want.Durability.Timeout, want.Durability.AOF = 1, 500*time.Millisecond, true
	if cfg.Redis == nil || *cfg.Redis != want {
		t.Fatalf("redis = %+v\nwant    %+v", cfg.Redis, want)
	}
	if cfg, err := gateway.ParseConfig("g.json", []byte(goodConfig)); err != nil || cfg.Redis != nil {
		t.Fatalf("no redis object: %+v, %v", cfg.Redis, err)
	}
}

func TestConfigRedisRefusals(t *testing.T) {
	for _, c := range []struct {
		name, redis, pointer, msg string
	}{
		{"password in the URL", `{"url": "rediss://toolcanon:hunter2@h:6380"}`, "/redis/url", "carries a password"},
		{"no url", `{"user": "toolcanon"}`, "/redis", `missing member "url"`},
		{"misspelt", `{"url": "h:1", "pasword_file": "x"}`, "/redis/pasword_file", "unknown member"},
		{"number as a string", `{"url": "h:1", "durability_replicas": "1"}`, "/redis/durability_replicas", "expected a number"},
		{"string as a bool", `{"url": "h:1", "cluster": "yes"}`, "/redis/cluster", "expected true or false"},
		{"bad duration", `{"url": "h:1", "durability_replicas": 1, "durability_timeout": "soon"}`, "/redis/durability_timeout", "not a duration"},
		{"tls file on plain", `{"url": "redis://h:1", "tls_ca_file": "ca.pem"}`, "/redis/tls_ca_file", "needs TLS"},
		{"no timeout", `{"url": "h:1", "durability_replicas": 1}`, "/redis", "durability_timeout: required with durability_replicas"},
		{"topologies", `{"url": "h:1", "cluster": true, "standalone": true}`, "/redis", "exclude each other"},
	} {
		_, err := gateway.ParseConfig("g.json", []byte(withRedis(t, c.redis)))
		var ce *gateway.ConfigError
		if !errors.As(err, &ce) || ce.Pointer != c.pointer || !strings.Contains(ce.Msg, c.msg) || ce.Line == 0 {
			t.Errorf("%s: %v, want at %s %q", c.name, err, c.pointer, c.msg)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") || canonical.CodeOf(err) != canonical.CodeInvalidArgument {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// No upstream is handed the Redis password: not in its environment, not as
// its bearer token.
func TestConfigKeepsTheRedisPasswordFromUpstreams(t *testing.T) {
	for _, c := range []struct{ name, doc, pointer string }{
		{"inherit_env", edit(t, `"env": {"KB_MODE": "ro"}`, `"env": {"KB_MODE": "ro"}, "inherit_env": ["HOME", "TOOLCANON_REDIS_PASSWORD"]`),
			"/upstreams/kb/inherit_env/1"},
		{"bearer token", edit(t, `"bearer_token_env": "LOGS_TOKEN"`, `"bearer_token_env": "TOOLCANON_REDIS_PASSWORD"`),
			"/upstreams/logs/bearer_token_env"},
		{"password_env", withRedis(t, `{"url": "h:1", "password_env": "REDIS_PW"}`),
			""},
	} {
		doc := c.doc
		if c.name == "password_env" {
			doc = strings.Replace(doc, `"bearer_token_env": "LOGS_TOKEN"`, `"bearer_token_env": "REDIS_PW"`, 1)
			c.pointer = "/upstreams/logs/bearer_token_env"
		}
		_, err := gateway.ParseConfig("g.json", []byte(doc))
		var ce *gateway.ConfigError
		if !errors.As(err, &ce) || ce.Pointer != c.pointer || !strings.Contains(ce.Msg, "holds the Redis password") {
			t.Errorf("%s: %v, want a refusal at %s", c.name, err, c.pointer)
		}
	}
}
