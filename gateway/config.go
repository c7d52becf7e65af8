package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/canonical/redisstore/redisconn"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/mcpresult"
	"github.com/toolcanon/toolcanon/registry"
)

// Bounds of a configuration file.
const (
	MaxConfigBytes = 1 << 20
	MaxUpstreams   = 32
	MaxTools       = registry.MaxDefinitions
	MaxGrants      = 64
	MaxRunTTL      = 30 * 24 * time.Hour
	DefaultRunTTL  = 24 * time.Hour
)

// Config is a parsed gateway configuration file. Build one with LoadConfig
// or ParseConfig: they check everything a gateway needs before it starts.
type Config struct {
	File      string                    // the file it was read from
	Upstreams map[string]UpstreamConfig // by name
	Identity  IdentityConfig
	Run       RunConfig
	Tools     []ToolConfig
	Prompts   []PromptConfig   // the upstream prompts exposed
	Resources []ResourceConfig // the upstream resources and resource templates exposed
	Policy    []Grant
	Progress  *ProgressConfig // nil: no progress tools
	HTTP      HTTPConfig
	Handles   HandlesConfig // the "handles" object
	// Redis is the "redis" object: how the gateway reaches its store (nil:
	// the command's flags say, or the store is in memory).
	Redis *redisconn.Spec
	// Version is a digest of the file's bytes; the static policy's fence
	// carries it, so that decisions name the configuration they came from.
	Version string
}

// UpstreamConfig is one upstream MCP server: a command to start (stdio) or
// a streamable HTTP URL.
type UpstreamConfig struct {
	// Command is the program and its arguments. A program path with a slash
	// ("./kb-server") is made absolute against the configuration file's
	// directory; a bare name ("kb-server") is looked up on PATH.
	Command []string
	// Env is the command's environment besides the minimal one (see
	// UpstreamOptions.Env); InheritEnv names more of the gateway's own.
	Env        map[string]string
	InheritEnv []string
	// Dir is the command's working directory: the absolute directory of the
	// configuration file, so that relative arguments mean the same whatever
	// the gateway's working directory.
	Dir            string
	URL            string // streamable HTTP endpoint
	BearerTokenEnv string // environment variable holding a bearer token for URL
	// LongRunning marks every tool of the upstream as long-running: a call
	// of it from an agent that declared the tasks extension is answered
	// with a task (see ToolConfig.LongRunning).
	LongRunning bool
}

// IdentityConfig says who the calls act for and where their identity is
// read.
type IdentityConfig struct {
	Project        string          // the project every call acts in
	Principal      string          // the subject of calls that carry no authenticated principal; "" refuses them
	ToolCallIDKeys []string        // _meta keys accepted besides MetaToolCallID
	RunIDKeys      []string        // _meta keys accepted besides MetaRunID
	RunHeader      string          // HTTP header naming the run
	DefaultRun     string          // run of calls that name none; "" refuses them
	RunToken       *RunTokenConfig // signed run tokens (see MintRunToken); nil: none accepted
}

// RunConfig holds the run limits and the record TTL shared by every tool.
type RunConfig struct {
	Limits canonical.Limits
	TTL    time.Duration
}

// ToolConfig is one exposed tool.
type ToolConfig struct {
	Name         string              // agent-facing name
	Upstream     string              // upstream name
	UpstreamTool string              // the tool's name on the upstream
	Pin          string              // digest of the upstream definition as reviewed (see Digest)
	Definition   registry.Definition // what the registry holds and the agent sees
	Projector    ProjectorConfig
	TTL          time.Duration // record TTL of this tool's calls; 0: the run's
	// LongRunning: a call from an agent that declared the tasks extension
	// (io.modelcontextprotocol/tasks) is answered with a task once its
	// record exists, and runs on; the agent polls tasks/get.
	LongRunning bool
	// Group is the tool's handle group ("group"); "" means its upstream's
	// name (see HandlesConfig).
	Group string
}

// ProjectorConfig chooses and configures a tool's projector.
type ProjectorConfig struct {
	Kind       string            // "mcp" (default), "rag" or "querylog"
	Limits     projectors.Limits // budgets; zero fields take projectors.DefaultLimits
	Input      map[string]string // rag and querylog: their input field -> the call's argument
	Paths      map[string]string // rag and querylog: field paths of the response (gjson syntax)
	SourceKind string            // querylog: the source_kind reported
	Media      mcpresult.Media   // mcp: the images, audio and resources that pass
}

// ProgressConfig names the two built-in progress tools.
type ProgressConfig struct {
	FactsTool  string
	ReportTool string
	Threshold  int64
}

// HTTPConfig configures the streamable HTTP listener.
type HTTPConfig struct {
	// BearerTokens, when any, are the only tokens accepted; each names the
	// principal it authenticates. Only their SHA-256 digests are stored.
	BearerTokens []BearerToken
	// OAuth, when set, accepts OAuth access tokens too (http.oauth).
	OAuth *OAuthConfig
}

// BearerToken is one accepted token, by digest.
type BearerToken struct {
	SHA256  [32]byte
	Subject string
}

// ConfigError reports a configuration problem: where it is, what is wrong
// and how to fix it.
type ConfigError struct {
	File    string
	Line    int    // 1-based; 0 when the problem has no place (a missing file)
	Column  int    // 1-based, in bytes
	Pointer string // RFC 6901 pointer to the value at fault; "" is the root
	Msg     string
	Fix     string
}

// Error renders the problem as file:line:column: at "pointer": message; fix: how.
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	if e.Line > 0 || e.Pointer != "" {
		b.WriteString(": at " + strconv.Quote(pointerOrRoot(e.Pointer)))
	}
	b.WriteString(": " + e.Msg)
	if e.Fix != "" {
		b.WriteString("; fix: " + e.Fix)
	}
	return b.String()
}

// Unwrap relates the error to INVALID_ARGUMENT.
func (e *ConfigError) Unwrap() error {
	return &canonical.Error{Code: canonical.CodeInvalidArgument, Msg: e.Msg}
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// LoadConfig reads and parses the configuration file at path.
func LoadConfig(path string) (*Config, error) {
	data, err := readConfig(path)
	if err != nil {
		return nil, err
	}
	return ParseConfig(path, data)
}

// LoadPinConfig reads the configuration file at path for `gateway pin`:
// only the upstreams are required, so that a first configuration can list
// no tool yet; whatever else it holds is checked as LoadConfig checks it.
func LoadPinConfig(path string) (*Config, error) {
	data, err := readConfig(path)
	if err != nil {
		return nil, err
	}
	return parseConfig(path, data, true)
}

// readConfig reads at most one byte more than MaxConfigBytes, so that a
// larger file is refused without being read whole.
func readConfig(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: "cannot read the file: " + rootMessage(err), Fix: "give the path of a readable configuration file"}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, &ConfigError{File: path, Msg: "cannot read the file: " + rootMessage(err), Fix: "give the path of a readable configuration file"}
	}
	return data, nil
}

func rootMessage(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

// ParseConfig parses a configuration file's bytes; file names it in errors
// and anchors relative command paths. Nothing is connected or started.
func ParseConfig(file string, data []byte) (*Config, error) {
	return parseConfig(file, data, false)
}

func parseConfig(file string, data []byte, pinOnly bool) (*Config, error) {
	c := &cfgParser{file: file, data: data, pinOnly: pinOnly}
	if len(data) > MaxConfigBytes {
		return nil, &ConfigError{File: file, Msg: fmt.Sprintf("the file is larger than %d bytes", MaxConfigBytes), Fix: "keep the configuration under 1 MiB"}
	}
	root, err := parseTree(data)
	if err != nil {
		var te *treeError
		errors.As(err, &te)
		line, col := position(data, te.off)
		return nil, &ConfigError{File: file, Line: line, Column: col, Msg: "invalid JSON: " + te.reason,
			Fix: "the file is strict JSON: no comments, no trailing commas, no repeated names"}
	}
	cfg, err := c.config(root)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	cfg.Version = hex.EncodeToString(sum[:8])
	return cfg, nil
}

// cfgParser turns the tree into a Config, failing at the first problem.
type cfgParser struct {
	file    string
	data    []byte
	pinOnly bool // identity, tools and policy may be missing
}

func (c *cfgParser) fail(n *jnode, ptr, fix, format string, args ...any) error {
	e := &ConfigError{File: c.file, Pointer: ptr, Msg: fmt.Sprintf(format, args...), Fix: fix}
	if n != nil {
		e.Line, e.Column = position(c.data, n.off)
	}
	return e
}

// obj checks that n is an object whose members are all among allowed,
// naming the closest allowed one for a misspelling.
func (c *cfgParser) obj(n *jnode, ptr string, allowed ...string) error {
	if n.kind != jObject {
		return c.fail(n, ptr, "write an object: {…}", "expected an object, found %s", n.kind)
	}
	for i, k := range n.keys {
		if !slices.Contains(allowed, k) {
			fix := "remove it; allowed here: " + strings.Join(allowed, ", ")
			if s := closest(k, allowed); s != "" {
				fix = "did you mean " + strconv.Quote(s) + "?"
			}
			return c.fail(n.vals[i], ptr+"/"+escapePointer(k), fix, "unknown member %q", k)
		}
	}
	return nil
}

func (c *cfgParser) required(n *jnode, ptr, key, fix string) (*jnode, error) {
	v := n.member(key)
	if v == nil {
		return nil, c.fail(n, ptr, fix, "missing member %q", key)
	}
	return v, nil
}

// section returns a required top-level member; under pinOnly a missing one
// is nil, not an error.
func (c *cfgParser) section(root *jnode, key, fix string) (*jnode, error) {
	if n := root.member(key); n != nil || !c.pinOnly {
		if n == nil {
			return nil, c.fail(root, "", fix, "missing member %q", key)
		}
		return n, nil
	}
	return nil, nil
}

func (c *cfgParser) str(n *jnode, ptr, fix string) (string, error) {
	if n.kind != jString {
		return "", c.fail(n, ptr, fix, "expected a string, found %s", n.kind)
	}
	return n.str, nil
}

// optStr reads an optional string member; absent is "".
func (c *cfgParser) optStr(n *jnode, ptr, key, fix string, check func(string) bool) (string, error) {
	v := n.member(key)
	if v == nil {
		return "", nil
	}
	s, err := c.str(v, ptr+"/"+key, fix)
	if err != nil {
		return "", err
	}
	if check != nil && !check(s) {
		return "", c.fail(v, ptr+"/"+key, fix, "%q is not valid here", s)
	}
	return s, nil
}

func (c *cfgParser) strList(n *jnode, ptr string, maxLen int, fix string, check func(string) bool) ([]string, error) {
	if n.kind != jArray {
		return nil, c.fail(n, ptr, fix, "expected an array of strings, found %s", n.kind)
	}
	if len(n.elems) > maxLen {
		return nil, c.fail(n, ptr, fix, "%d entries exceed %d", len(n.elems), maxLen)
	}
	out := make([]string, 0, len(n.elems))
	for i, e := range n.elems {
		p := ptr + "/" + strconv.Itoa(i)
		s, err := c.str(e, p, fix)
		if err != nil {
			return nil, err
		}
		if check != nil && !check(s) {
			return nil, c.fail(e, p, fix, "%q is not valid here", s)
		}
		if slices.Contains(out, s) {
			return nil, c.fail(e, p, "list each entry once", "%q is listed twice", s)
		}
		out = append(out, s)
	}
	return out, nil
}

// int reads an integer in [lo, hi].
func (c *cfgParser) int(n *jnode, ptr string, lo, hi int64, fix string) (int64, error) {
	if n.kind != jNumber {
		return 0, c.fail(n, ptr, fix, "expected an integer, found %s", n.kind)
	}
	v, err := strconv.ParseInt(n.str, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, c.fail(n, ptr, fix, "%s is not an integer in [%d, %d]", n.str, lo, hi)
	}
	return v, nil
}

func (c *cfgParser) boolean(n *jnode, ptr string) (bool, error) {
	if n.kind != jBool {
		return false, c.fail(n, ptr, "write true or false", "expected a boolean, found %s", n.kind)
	}
	return n.str == "true", nil
}

func (c *cfgParser) duration(n *jnode, ptr string, lo, hi time.Duration, fix string) (time.Duration, error) {
	s, err := c.str(n, ptr, fix)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < lo || d > hi {
		return 0, c.fail(n, ptr, fix, "%q is not a duration in [%v, %v]", s, lo, hi)
	}
	return d, nil
}

func (c *cfgParser) config(root *jnode) (*Config, error) {
	if err := c.obj(root, "", "upstreams", "identity", "run", "tools", "prompts", "resources", "policy", "progress", "http", "redis", "handles"); err != nil {
		return nil, err
	}
	cfg := &Config{File: c.file}
	n, err := c.required(root, "", "upstreams", `add "upstreams": {"name": {"command": ["server"]}} or {"name": {"url": "http://…/mcp"}}`)
	if err != nil {
		return nil, err
	}
	if cfg.Upstreams, err = c.upstreams(n, "/upstreams"); err != nil {
		return nil, err
	}
	if n, err = c.section(root, "identity", `add "identity": {"project": "my-project", "principal": "local-agent"}`); err != nil {
		return nil, err
	} else if n != nil {
		if cfg.Identity, err = c.identity(n, "/identity"); err != nil {
			return nil, err
		}
	}
	cfg.Run = RunConfig{TTL: DefaultRunTTL}
	if n = root.member("run"); n != nil {
		if cfg.Run, err = c.run(n, "/run"); err != nil {
			return nil, err
		}
	}
	if n, err = c.section(root, "tools", "list the upstream tools to expose; run `toolcanon gateway pin --config FILE` for drafts"); err != nil {
		return nil, err
	} else if n != nil {
		if cfg.Tools, err = c.tools(n, "/tools", cfg); err != nil {
			return nil, err
		}
	}
	if n = root.member("prompts"); n != nil {
		if cfg.Prompts, err = c.prompts(n, "/prompts", cfg); err != nil {
			return nil, err
		}
	}
	if n = root.member("resources"); n != nil {
		if cfg.Resources, err = c.resources(n, "/resources", cfg); err != nil {
			return nil, err
		}
	}
	if n, err = c.section(root, "policy", `add "policy": {"grants": [{"principals": ["*"], "projects": ["my-project"], "allow": ["tool.call:*"]}]}`); err != nil {
		return nil, err
	} else if n != nil {
		if cfg.Policy, err = c.policy(n, "/policy"); err != nil {
			return nil, err
		}
	}
	if n = root.member("progress"); n != nil {
		if cfg.Progress, err = c.progress(n, "/progress", cfg); err != nil {
			return nil, err
		}
	}
	if n = root.member("http"); n != nil {
		if cfg.HTTP, err = c.http(n, "/http"); err != nil {
			return nil, err
		}
	}
	if n = root.member("redis"); n != nil {
		if cfg.Redis, err = c.redis(n, "/redis"); err != nil {
			return nil, err
		}
	}
	if n = root.member("handles"); n != nil {
		if cfg.Handles, err = c.handles(n, "/handles", cfg); err != nil {
			return nil, err
		}
	}
	if err := c.redisSecretStays(root, cfg); err != nil {
		return nil, err
	}
	if err := c.grantNames(root, cfg); err != nil {
		return nil, err
	}
	if err := c.oauthScopes(root, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// grantNames refuses a grant of tool.call:<name> where name is what agents
// call a tool but not its registry name: the policy is asked for
// tool.call:<definition.name>, so the grant would allow nothing.
func (c *cfgParser) grantNames(root *jnode, cfg *Config) error {
	regName := map[string]string{}
	for _, t := range cfg.Tools {
		regName[t.Name] = t.Definition.Name
	}
	for _, t := range cfg.Tools {
		delete(regName, t.Definition.Name)
	}
	if p := cfg.Progress; p != nil {
		delete(regName, p.FactsTool)
		delete(regName, p.ReportTool)
	}
	for i, g := range cfg.Policy {
		for j, perm := range append(append([]string{}, g.Allow...), g.RequireApproval...) {
			name, ok := strings.CutPrefix(perm, registry.CallPermissionPrefix)
			reg, agentName := regName[name]
			if !ok || !agentName {
				continue
			}
			key := "allow"
			if j >= len(g.Allow) {
				key, j = "require_approval", j-len(g.Allow)
			}
			ptr := fmt.Sprintf("/policy/grants/%d/%s/%d", i, key, j)
			n := root.member("policy").member("grants").elems[i].member(key).elems[j]
			return c.fail(n, ptr, fmt.Sprintf("write %q", registry.CallPermissionPrefix+reg),
				"%q names the tool as agents call it; grants name a tool by its definition's name, which the policy is asked for", perm)
		}
	}
	return nil
}

func (c *cfgParser) upstreams(n *jnode, ptr string) (map[string]UpstreamConfig, error) {
	const fix = `name each upstream with 1-32 characters of [a-z0-9_-]: {"kb": {"command": ["kb-server"]}}`
	if n.kind != jObject || len(n.keys) == 0 || len(n.keys) > MaxUpstreams {
		return nil, c.fail(n, ptr, fix, "expected an object of 1 to %d upstreams", MaxUpstreams)
	}
	out := make(map[string]UpstreamConfig, len(n.keys))
	for i, name := range n.keys {
		p := ptr + "/" + escapePointer(name)
		v := n.vals[i]
		if !upstreamName(name) {
			return nil, c.fail(v, p, fix, "upstream name %q is not valid", name)
		}
		if err := c.obj(v, p, "command", "env", "inherit_env", "url", "bearer_token_env", "long_running"); err != nil {
			return nil, err
		}
		var u UpstreamConfig
		if lr := v.member("long_running"); lr != nil {
			var err error
			if u.LongRunning, err = c.boolean(lr, p+"/long_running"); err != nil {
				return nil, err
			}
		}
		cmd, url := v.member("command"), v.member("url")
		switch {
		case (cmd == nil) == (url == nil):
			return nil, c.fail(v, p, `give either "command": ["program", "arg"…] or "url": "http://host:port/mcp"`, "an upstream has exactly one of command and url")
		case cmd != nil:
			args, err := c.strList(cmd, p+"/command", 64, `"command": ["program", "arg", …]`, func(s string) bool { return s != "" && !strings.ContainsRune(s, 0) })
			if err != nil {
				return nil, err
			}
			if len(args) == 0 {
				return nil, c.fail(cmd, p+"/command", `"command": ["program", "arg", …]`, "the command is empty")
			}
			dir, err := filepath.Abs(filepath.Dir(c.file))
			if err != nil {
				return nil, c.fail(cmd, p+"/command", "give the configuration file as an absolute path", "the configuration's directory is unknown: %v", err)
			}
			if strings.ContainsRune(args[0], '/') && !filepath.IsAbs(args[0]) {
				args[0] = filepath.Join(dir, args[0])
			}
			u.Command, u.Dir = args, dir
			if ie := v.member("inherit_env"); ie != nil {
				if u.InheritEnv, err = c.strList(ie, p+"/inherit_env", 64, `"inherit_env": ["NAME", …]`, envName); err != nil {
					return nil, err
				}
			}
			if e := v.member("env"); e != nil {
				if err := c.obj(e, p+"/env", e.keys...); err != nil {
					return nil, err
				}
				u.Env = map[string]string{}
				for j, k := range e.keys {
					ep := p + "/env/" + escapePointer(k)
					if !envName(k) {
						return nil, c.fail(e.vals[j], ep, "name variables with [A-Za-z_][A-Za-z0-9_]*", "%q is not an environment variable name", k)
					}
					s, err := c.str(e.vals[j], ep, "give the value as a string")
					if err != nil {
						return nil, err
					}
					u.Env[k] = s
				}
			}
			if b := v.member("bearer_token_env"); b != nil {
				return nil, c.fail(b, p+"/bearer_token_env", "remove it: a command upstream takes its secrets from env", "bearer_token_env applies to url upstreams only")
			}
		default:
			s, err := c.str(url, p+"/url", `"url": "http://127.0.0.1:8080/mcp"`)
			if err != nil {
				return nil, err
			}
			if !httpURL(s) {
				return nil, c.fail(url, p+"/url", `"url": "http://127.0.0.1:8080/mcp"`, "%q is not an http or https URL", s)
			}
			u.URL = s
			if u.BearerTokenEnv, err = c.optStr(v, p, "bearer_token_env", "name the environment variable that holds the token", envName); err != nil {
				return nil, err
			}
			if e := v.member("env"); e != nil {
				return nil, c.fail(e, p+"/env", `remove it, or use "bearer_token_env"`, "env applies to command upstreams only")
			}
			if e := v.member("inherit_env"); e != nil {
				return nil, c.fail(e, p+"/inherit_env", `remove it`, "inherit_env applies to command upstreams only")
			}
		}
		out[name] = u
	}
	return out, nil
}

func (c *cfgParser) identity(n *jnode, ptr string) (IdentityConfig, error) {
	var id IdentityConfig
	if err := c.obj(n, ptr, "project", "principal", "tool_call_id_keys", "run_id_keys", "run_header", "default_run", "run_token"); err != nil {
		return id, err
	}
	p, err := c.required(n, ptr, "project", `add "project": "my-project"`)
	if err != nil {
		return id, err
	}
	if id.Project, err = c.str(p, ptr+"/project", "use 1-128 characters of [A-Za-z0-9_.-]"); err != nil {
		return id, err
	}
	if canonical.ValidateRunID(id.Project) != nil {
		return id, c.fail(p, ptr+"/project", "use 1-128 characters of [A-Za-z0-9_.-], starting with a letter or digit", "%q is not a project id", id.Project)
	}
	if id.Principal, err = c.optStr(n, ptr, "principal", "use 1-256 printable ASCII characters without spaces", subject); err != nil {
		return id, err
	}
	metaKey := func(s string) bool { return len(s) > 0 && len(s) <= 128 && printableNoSpace(s) }
	for _, k := range []struct {
		key string
		dst *[]string
	}{{"tool_call_id_keys", &id.ToolCallIDKeys}, {"run_id_keys", &id.RunIDKeys}} {
		if v := n.member(k.key); v != nil {
			if *k.dst, err = c.strList(v, ptr+"/"+k.key, 8, `list _meta keys such as "redpanda.com/llm-tool-call-id"`, metaKey); err != nil {
				return id, err
			}
		}
	}
	if id.RunHeader, err = c.optStr(n, ptr, "run_header", `name an HTTP header such as "X-Toolcanon-Run"`, headerName); err != nil {
		return id, err
	}
	if id.DefaultRun, err = c.optStr(n, ptr, "default_run", fmt.Sprintf("use 1-%d characters of [A-Za-z0-9_.-]", MaxRunName), func(s string) bool { return len(s) <= MaxRunName && canonical.ValidateRunID(s) == nil }); err != nil {
		return id, err
	}
	if v := n.member("run_token"); v != nil {
		if id.RunToken, err = c.runToken(v, ptr+"/run_token"); err != nil {
			return id, err
		}
	}
	return id, nil
}

func (c *cfgParser) run(n *jnode, ptr string) (RunConfig, error) {
	r := RunConfig{TTL: DefaultRunTTL}
	if err := c.obj(n, ptr, "max_calls", "max_calls_per_tool", "max_run_bytes", "max_record_bytes", "max_result_bytes", "ttl"); err != nil {
		return r, err
	}
	fields := []struct {
		key string
		dst *int64
		hi  int64
	}{
		{"max_calls", &r.Limits.MaxCallsPerRun, canonical.MaxCallsCeiling},
		{"max_calls_per_tool", &r.Limits.MaxCallsPerTool, canonical.MaxCallsCeiling},
		{"max_run_bytes", &r.Limits.MaxRunBytes, canonical.MaxRunBytesCeiling},
		{"max_record_bytes", &r.Limits.MaxRecordBytes, canonical.MaxRecordBytesCeiling},
		{"max_result_bytes", &r.Limits.MaxResultBytes, canonical.MaxRecordBytesCeiling},
	}
	for _, f := range fields {
		if v := n.member(f.key); v != nil {
			var err error
			if *f.dst, err = c.int(v, ptr+"/"+f.key, 1, f.hi, fmt.Sprintf("give an integer from 1 to %d", f.hi)); err != nil {
				return r, err
			}
		}
	}
	if err := r.Limits.Validate(); err != nil {
		return r, c.fail(n, ptr, "keep max_result_bytes at most max_record_bytes", "the limits do not fit together: %s", errMsg(err))
	}
	if v := n.member("ttl"); v != nil {
		var err error
		if r.TTL, err = c.duration(v, ptr+"/ttl", time.Second, MaxRunTTL, `give a Go duration such as "24h"`); err != nil {
			return r, err
		}
	}
	return r, nil
}

func errMsg(err error) string {
	var ce *canonical.Error
	if errors.As(err, &ce) && ce.Msg != "" {
		return ce.Msg
	}
	return err.Error()
}

func (c *cfgParser) tools(n *jnode, ptr string, cfg *Config) ([]ToolConfig, error) {
	if n.kind != jArray || len(n.elems) == 0 || len(n.elems) > MaxTools {
		return nil, c.fail(n, ptr, "list the tools to expose: an upstream tool that is not listed is not exposed", "expected an array of 1 to %d tools", MaxTools)
	}
	out := make([]ToolConfig, 0, len(n.elems))
	for i, e := range n.elems {
		t, err := c.tool(e, ptr+"/"+strconv.Itoa(i), cfg)
		if err != nil {
			return nil, err
		}
		for j, prev := range out {
			switch {
			case prev.Name == t.Name:
				return nil, c.fail(e, ptr+"/"+strconv.Itoa(i)+"/name", "give each exposed tool its own name",
					"the name %q is already used by /tools/%d", t.Name, j)
			case prev.Definition.Name == t.Definition.Name && prev.Definition.Version == t.Definition.Version:
				return nil, c.fail(e, ptr+"/"+strconv.Itoa(i)+"/definition", "give each tool its own registry name or version",
					"%s@%s is already defined by /tools/%d", t.Definition.Name, t.Definition.Version, j)
			}
		}
		out = append(out, t)
	}
	return out, nil
}

func (c *cfgParser) tool(n *jnode, ptr string, cfg *Config) (ToolConfig, error) {
	var t ToolConfig
	if v := n.member("unbounded"); v != nil && n.kind == jObject {
		return t, c.fail(v, ptr+"/unbounded", "review the draft's input_schema, narrowed from the upstream's (`toolcanon gateway pin` printed each feature it left out, with its JSON pointer), then delete this member",
			"the draft is marked for review: %s", oneLineOf(v.str))
	}
	if err := c.obj(n, ptr, "name", "upstream", "upstream_tool", "pin", "definition", "projector", "ttl", "group", "long_running"); err != nil {
		return t, err
	}
	if lr := n.member("long_running"); lr != nil {
		var err error
		if t.LongRunning, err = c.boolean(lr, ptr+"/long_running"); err != nil {
			return t, err
		}
	}
	v, err := c.required(n, ptr, "name", `add "name": "search_docs", the name agents call`)
	if err != nil {
		return t, err
	}
	if t.Name, err = c.str(v, ptr+"/name", "use 1-128 characters of [A-Za-z0-9_.-]"); err != nil {
		return t, err
	}
	if canonical.ValidateToolName(t.Name) != nil {
		return t, c.fail(v, ptr+"/name", "use 1-128 characters of [A-Za-z0-9_.-], starting with a letter or digit", "%q is not a tool name", t.Name)
	}
	if v, err = c.required(n, ptr, "upstream", "name one of the upstreams"); err != nil {
		return t, err
	}
	if t.Upstream, err = c.str(v, ptr+"/upstream", "name one of the upstreams"); err != nil {
		return t, err
	}
	if _, ok := cfg.Upstreams[t.Upstream]; !ok {
		names := make([]string, 0, len(cfg.Upstreams))
		for k := range cfg.Upstreams {
			names = append(names, k)
		}
		slices.Sort(names)
		return t, c.fail(v, ptr+"/upstream", "name one of: "+strings.Join(names, ", "), "there is no upstream %q", t.Upstream)
	}
	if v, err = c.required(n, ptr, "upstream_tool", `add "upstream_tool": the tool's name on the upstream`); err != nil {
		return t, err
	}
	if t.UpstreamTool, err = c.str(v, ptr+"/upstream_tool", "give the tool's name on the upstream"); err != nil {
		return t, err
	}
	if t.UpstreamTool == "" || len(t.UpstreamTool) > 128 {
		return t, c.fail(v, ptr+"/upstream_tool", "give the tool's name on the upstream", "the upstream tool name must be 1-128 bytes")
	}
	const pinFix = "run `toolcanon gateway pin --config FILE`, review the tool, and paste its pin"
	if v, err = c.required(n, ptr, "pin", pinFix); err != nil {
		return t, err
	}
	if t.Pin, err = c.str(v, ptr+"/pin", pinFix); err != nil {
		return t, err
	}
	if !validPin(t.Pin) {
		return t, c.fail(v, ptr+"/pin", pinFix, "%q is not a pin (sha256: and 64 hex digits)", t.Pin)
	}
	if v, err = c.required(n, ptr, "definition", "paste the draft definition printed by `toolcanon gateway pin`, reviewed"); err != nil {
		return t, err
	}
	if t.Definition, err = c.definition(v, ptr+"/definition"); err != nil {
		return t, err
	}
	t.Projector = ProjectorConfig{Kind: "mcp", Limits: projectors.DefaultLimits()}
	if v = n.member("projector"); v != nil {
		if t.Projector, err = c.projector(v, ptr+"/projector"); err != nil {
			return t, err
		}
	}
	maxResult := cfg.Run.Limits.WithDefaults().MaxResultBytes
	if m := t.Projector.Media.MaxBytes; m > 0 && int64(t.Projector.Limits.Total+m) > maxResult {
		return t, c.fail(n, ptr+"/projector/media/max_bytes", fmt.Sprintf(`raise /run/max_result_bytes to at least %d, or lower "max_bytes"`, t.Projector.Limits.Total+m),
			"the projector's total budget %d and media budget %d exceed the run's max_result_bytes %d", t.Projector.Limits.Total, m, maxResult)
	}
	if int64(t.Projector.Limits.Total) > maxResult {
		p := ptr + "/projector/limits/total"
		return t, c.fail(n, p, fmt.Sprintf(`lower "total" to at most %d, or raise /run/max_result_bytes`, maxResult),
			"the projector's total budget %d exceeds the run's max_result_bytes %d", t.Projector.Limits.Total, maxResult)
	}
	// The record must outlive the call, or every call of the tool is refused.
	ttl, at, node := cfg.Run.TTL, "/run/ttl", n
	if v = n.member("ttl"); v != nil {
		if t.TTL, err = c.duration(v, ptr+"/ttl", time.Second, MaxRunTTL, `give a Go duration such as "1h"`); err != nil {
			return t, err
		}
		ttl, at, node = t.TTL, ptr+"/ttl", v
	}
	if t.Group, err = c.optStr(n, ptr, "group", "name the tool's handle group with 1-128 characters of [A-Za-z0-9_.-]", validGroup); err != nil {
		return t, err
	}
	if need := boundary.MinRecordTTL(t.Definition.Timeout); ttl < need {
		return t, c.fail(node, at, fmt.Sprintf(`raise the ttl to at least %v, or lower the tool's timeout`, need),
			"the record TTL %v is shorter than what a call of %s needs (its timeout %v, then projection and recording: %v); every call would be refused",
			ttl, t.Name, t.Definition.Timeout, need)
	}
	return t, nil
}

func (c *cfgParser) definition(n *jnode, ptr string) (registry.Definition, error) {
	var d registry.Definition
	if err := c.obj(n, ptr, "name", "version", "description", "effect", "risk", "permissions", "timeout", "input_schema"); err != nil {
		return d, err
	}
	get := func(key, fix string) (*jnode, string, error) {
		v, err := c.required(n, ptr, key, fix)
		if err != nil {
			return nil, "", err
		}
		s, err := c.str(v, ptr+"/"+key, fix)
		return v, s, err
	}
	var err error
	var v *jnode
	if v, d.Name, err = get("name", `add "name": "kb.search" (lower-case segments joined by '.', '-' or '_')`); err != nil {
		return d, err
	}
	if !registry.ValidName(d.Name) {
		return d, c.fail(v, ptr+"/name", "use lower-case segments joined by '.', '-' or '_', such as \"kb.search\"", "%q is not a registry name", d.Name)
	}
	if v, d.Version, err = get("version", `add "version": "1.0.0"`); err != nil {
		return d, err
	}
	if !registry.ValidVersion(d.Version) {
		return d, c.fail(v, ptr+"/version", `use canonical SemVer such as "1.0.0"`, "%q is not a version", d.Version)
	}
	if v, d.Description, err = get("description", "describe the tool for the model"); err != nil {
		return d, err
	}
	if d.Description == "" || len(d.Description) > registry.MaxDescription {
		return d, c.fail(v, ptr+"/description", "describe the tool in 1 to 4096 bytes", "the description is empty or too long")
	}
	var s string
	if v, s, err = get("effect", `add "effect": "read" (or write, execute, external)`); err != nil {
		return d, err
	}
	if d.Effect = registry.Effect(s); !d.Effect.Valid() {
		return d, c.fail(v, ptr+"/effect", "use read, write, execute or external", "%q is not an effect", s)
	}
	if v, s, err = get("risk", `add "risk": "low" (or medium, high, critical)`); err != nil {
		return d, err
	}
	if d.Risk = registry.Risk(s); !d.Risk.Valid() {
		return d, c.fail(v, ptr+"/risk", "use low, medium, high or critical", "%q is not a risk", s)
	}
	if v = n.member("permissions"); v != nil {
		if d.Permissions, err = c.strList(v, ptr+"/permissions", registry.MaxPermissions, `list permissions such as "kb.read"`, nil); err != nil {
			return d, err
		}
	}
	if v, err = c.required(n, ptr, "timeout", `add "timeout": "30s"`); err != nil {
		return d, err
	}
	if d.Timeout, err = c.duration(v, ptr+"/timeout", registry.MinTimeout, registry.MaxTimeout, `give whole seconds from "1s" to "1h", such as "30s"`); err != nil {
		return d, err
	}
	if d.Timeout%time.Second != 0 {
		return d, c.fail(v, ptr+"/timeout", `give whole seconds from "1s" to "1h", such as "30s"`, "the duration %v is not whole seconds", d.Timeout)
	}
	if v, err = c.required(n, ptr, "input_schema", "paste the reviewed input schema (the bounded subset)"); err != nil {
		return d, err
	}
	d.InputSchema = v.raw
	if _, err := registry.New(d); err != nil {
		var se *registry.SchemaError
		if errors.As(err, &se) {
			return d, c.fail(v, ptr+"/input_schema"+se.Path, "keep the schema in the bounded subset: closed objects, strings with maxLength, bounded numbers and arrays, no $ref or composition",
				"keyword %q: %s", se.Keyword, se.Reason)
		}
		return d, c.fail(n, ptr, "correct the definition", "%s", strings.TrimPrefix(errMsg(err), "registry: "))
	}
	return d, nil
}

func (c *cfgParser) projector(n *jnode, ptr string) (ProjectorConfig, error) {
	pc := ProjectorConfig{Kind: "mcp", Limits: projectors.DefaultLimits()}
	if err := c.obj(n, ptr, "kind", "limits", "input", "paths", "source_kind", "media"); err != nil {
		return pc, err
	}
	var err error
	if v := n.member("kind"); v != nil {
		if pc.Kind, err = c.str(v, ptr+"/kind", "use mcp, rag or querylog"); err != nil {
			return pc, err
		}
		if pc.Kind != "mcp" && pc.Kind != "rag" && pc.Kind != "querylog" {
			return pc, c.fail(v, ptr+"/kind", "use mcp, rag or querylog", "%q is not a projector", pc.Kind)
		}
	}
	if v := n.member("limits"); v != nil {
		if err := c.obj(v, ptr+"/limits", "total", "collection", "item", "items", "text"); err != nil {
			return pc, err
		}
		for _, f := range []struct {
			key string
			dst *int
		}{{"total", &pc.Limits.Total}, {"collection", &pc.Limits.Collection}, {"item", &pc.Limits.Item}, {"items", &pc.Limits.Items}, {"text", &pc.Limits.Text}} {
			if m := v.member(f.key); m != nil {
				x, err := c.int(m, ptr+"/limits/"+f.key, 1, 1<<24, "give a positive integer")
				if err != nil {
					return pc, err
				}
				*f.dst = int(x)
			}
		}
		if err := pc.Limits.Validate(); err != nil {
			return pc, c.fail(v, ptr+"/limits", "keep text <= item <= collection <= total, total >= 256", "%s", strings.TrimPrefix(errMsg(err), "projectors: "))
		}
	}
	for _, f := range []struct {
		key string
		dst *map[string]string
	}{{"input", &pc.Input}, {"paths", &pc.Paths}} {
		v := n.member(f.key)
		if v == nil {
			continue
		}
		if pc.Kind == "mcp" {
			return pc, c.fail(v, ptr+"/"+f.key, `remove it, or set "kind" to rag or querylog`, "%s applies to the rag and querylog projectors only", f.key)
		}
		if v.kind != jObject {
			return pc, c.fail(v, ptr+"/"+f.key, `write {"field": "argument"}`, "expected an object, found %s", v.kind)
		}
		*f.dst = map[string]string{}
		for i, k := range v.keys {
			s, err := c.str(v.vals[i], ptr+"/"+f.key+"/"+escapePointer(k), "give a string")
			if err != nil {
				return pc, err
			}
			(*f.dst)[k] = s
		}
	}
	if pc.SourceKind, err = c.optStr(n, ptr, "source_kind", "use 1-32 characters of [A-Za-z0-9._/-]", nil); err != nil {
		return pc, err
	}
	if v := n.member("media"); v != nil {
		if pc.Media, err = c.media(v, ptr+"/media", pc.Kind); err != nil {
			return pc, err
		}
	}
	if pc.SourceKind != "" && pc.Kind != "querylog" {
		return pc, c.fail(n.member("source_kind"), ptr+"/source_kind", `remove it, or set "kind" to querylog`, "source_kind applies to the querylog projector only")
	}
	if _, err := newProjector(pc); err != nil {
		return pc, c.fail(n, ptr, "correct the projector's settings", "%s", errMsg(err))
	}
	return pc, nil
}

func (c *cfgParser) policy(n *jnode, ptr string) ([]Grant, error) {
	if err := c.obj(n, ptr, "grants"); err != nil {
		return nil, err
	}
	const grantFix = `{"principals": ["*"], "projects": ["my-project"], "allow": ["tool.call:*"]}`
	g, err := c.required(n, ptr, "grants", `add "grants": [`+grantFix+`]`)
	if err != nil {
		return nil, err
	}
	if g.kind != jArray || len(g.elems) == 0 || len(g.elems) > MaxGrants {
		return nil, c.fail(g, ptr+"/grants", "list 1 to 64 grants such as "+grantFix+"; what no grant allows is denied", "expected an array of 1 to %d grants", MaxGrants)
	}
	var out []Grant
	for i, e := range g.elems {
		p := ptr + "/grants/" + strconv.Itoa(i)
		if err := c.obj(e, p, "principals", "projects", "scopes", "allow", "require_approval"); err != nil {
			return nil, err
		}
		var gr Grant
		for _, f := range []struct {
			key      string
			dst      *[]string
			required bool
			check    func(string) bool
		}{
			{"principals", &gr.Principals, true, func(s string) bool { return s == "*" || subject(s) }},
			{"projects", &gr.Projects, true, func(s string) bool { return s == "*" || canonical.ValidateRunID(s) == nil }},
			{"scopes", &gr.Scopes, false, scopeToken},
			{"allow", &gr.Allow, false, validPattern},
			{"require_approval", &gr.RequireApproval, false, validPattern},
		} {
			v := e.member(f.key)
			if v == nil {
				if f.required {
					return nil, c.fail(e, p, `add "`+f.key+`": ["*"] or a list of names`, "missing member %q", f.key)
				}
				continue
			}
			if *f.dst, err = c.strList(v, p+"/"+f.key, 64, `list names, "*" for any, or permissions such as "tool.call:kb.*"`, f.check); err != nil {
				return nil, err
			}
			if f.required && len(*f.dst) == 0 {
				return nil, c.fail(v, p+"/"+f.key, `list at least one, or "*"`, "the list is empty")
			}
		}
		if len(gr.Allow) == 0 && len(gr.RequireApproval) == 0 {
			return nil, c.fail(e, p, `add "allow": ["tool.call:*"]`, "a grant that allows nothing")
		}
		out = append(out, gr)
	}
	return out, nil
}

func (c *cfgParser) progress(n *jnode, ptr string, cfg *Config) (*ProgressConfig, error) {
	pc := &ProgressConfig{FactsTool: "progress_facts", ReportTool: "progress_report"}
	if err := c.obj(n, ptr, "facts_tool", "report_tool", "threshold"); err != nil {
		return nil, err
	}
	nameOK := func(s string) bool { return canonical.ValidateToolName(s) == nil }
	for _, f := range []struct {
		key string
		dst *string
	}{{"facts_tool", &pc.FactsTool}, {"report_tool", &pc.ReportTool}} {
		s, err := c.optStr(n, ptr, f.key, "use 1-128 characters of [A-Za-z0-9_.-]", nameOK)
		if err != nil {
			return nil, err
		}
		if s != "" {
			*f.dst = s
		}
		for _, t := range cfg.Tools {
			if t.Name == *f.dst {
				return nil, c.fail(n, ptr+"/"+f.key, "give the progress tool a name no exposed tool has", "%q is already an exposed tool", t.Name)
			}
		}
	}
	if pc.FactsTool == pc.ReportTool {
		return nil, c.fail(n, ptr, "give the two progress tools different names", "both progress tools are named %q", pc.FactsTool)
	}
	if v := n.member("threshold"); v != nil {
		var err error
		if pc.Threshold, err = c.int(v, ptr+"/threshold", 1, 1000, "give an integer from 1 to 1000"); err != nil {
			return nil, err
		}
	}
	return pc, nil
}

func (c *cfgParser) http(n *jnode, ptr string) (HTTPConfig, error) {
	var h HTTPConfig
	if err := c.obj(n, ptr, "bearer_tokens", "oauth"); err != nil {
		return h, err
	}
	if v := n.member("oauth"); v != nil {
		var err error
		if h.OAuth, err = c.oauth(v, ptr+"/oauth"); err != nil {
			return h, err
		}
	}
	v := n.member("bearer_tokens")
	if v == nil {
		return h, nil
	}
	const fix = `list {"sha256": "<hex SHA-256 of the token>", "subject": "alice"}; never the token itself`
	if v.kind != jArray || len(v.elems) > 256 {
		return h, c.fail(v, ptr+"/bearer_tokens", fix, "expected an array of at most 256 tokens")
	}
	for i, e := range v.elems {
		p := ptr + "/bearer_tokens/" + strconv.Itoa(i)
		if err := c.obj(e, p, "sha256", "subject"); err != nil {
			return h, err
		}
		var bt BearerToken
		d, err := c.required(e, p, "sha256", fix)
		if err != nil {
			return h, err
		}
		s, err := c.str(d, p+"/sha256", fix)
		if err != nil {
			return h, err
		}
		raw, err := hex.DecodeString(s)
		if err != nil || len(raw) != 32 {
			return h, c.fail(d, p+"/sha256", fix, "expected 64 hex digits")
		}
		copy(bt.SHA256[:], raw)
		sv, err := c.required(e, p, "subject", fix)
		if err != nil {
			return h, err
		}
		if bt.Subject, err = c.str(sv, p+"/subject", "use 1-256 printable ASCII characters without spaces"); err != nil {
			return h, err
		}
		if !subject(bt.Subject) {
			return h, c.fail(sv, p+"/subject", "use 1-256 printable ASCII characters without spaces", "%q is not a subject", bt.Subject)
		}
		for j, prev := range h.BearerTokens {
			if prev.SHA256 == bt.SHA256 {
				return h, c.fail(d, p+"/sha256", "list each token once", "the same token as /http/bearer_tokens/%d", j)
			}
		}
		h.BearerTokens = append(h.BearerTokens, bt)
	}
	return h, nil
}

// closest returns the allowed name within two edits of s, if any.
func closest(s string, allowed []string) string {
	best, bestD := "", 3
	for _, a := range allowed {
		if d := editDistance(s, a, bestD); d < bestD {
			best, bestD = a, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or limit when it is
// at least limit (names are short; both are bounded by the caller).
func editDistance(a, b string, limit int) int {
	if len(a) > 64 || len(b) > 64 {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func upstreamName(s string) bool {
	if len(s) == 0 || len(s) > 32 || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func envName(s string) bool {
	if len(s) == 0 || len(s) > 128 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil && len(s) <= 2048
}

func printableNoSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// subject: 1 to 256 printable ASCII characters without spaces, as
// registry.Principal requires.
func subject(s string) bool { return len(s) > 0 && len(s) <= 256 && printableNoSpace(s) }

func headerName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func validPin(s string) bool {
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

// oneLineOf cuts s at its first line break and 512 bytes, for a message.
func oneLineOf(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	return cutText(s, 512)
}
