package registry

import (
	"cmp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/canonical"
)

// Bounds of a registry and of one definition.
const (
	MaxDefinitions   = 128  // definitions in one registry
	MaxPermissions   = 16   // required permissions of one definition
	MaxNameBytes     = 64   // tool name
	MaxVersionBytes  = 64   // tool version
	MaxPermissionLen = 128  // one permission
	MaxDescription   = 4096 // tool description, bytes
	MinTimeout       = time.Second
	MaxTimeout       = time.Hour
	MaxInputBytes    = 64 << 10  // canonical input
	MaxOutputBytes   = 256 << 10 // canonical output
	// Raw text may be larger than its canonical form: "\u0078" is six bytes
	// for one. Six times the canonical budget admits any escaping, and still
	// bounds what is parsed.
	maxRawInputBytes  = 6 * MaxInputBytes
	maxRawOutputBytes = 6 * MaxOutputBytes
)

// CallPermissionPrefix prefixes the permission every call is authorized for:
// "tool.call:<name>". Definitions may not require permissions under it.
const CallPermissionPrefix = "tool.call:"

// Effect is what a tool does to the world.
type Effect string

// Effects. The boundary executes only EffectRead tools.
const (
	EffectRead     Effect = "read"
	EffectWrite    Effect = "write"
	EffectExecute  Effect = "execute"
	EffectExternal Effect = "external"
)

// Valid reports whether e is one of the four effects.
func (e Effect) Valid() bool {
	return e == EffectRead || e == EffectWrite || e == EffectExecute || e == EffectExternal
}

// Risk is how much harm a wrong call can do.
type Risk string

// Risks, in increasing order.
const (
	RiskLow      Risk = "low"
	RiskMedium   Risk = "medium"
	RiskHigh     Risk = "high"
	RiskCritical Risk = "critical"
)

// Valid reports whether r is one of the four risks.
func (r Risk) Valid() bool {
	return r == RiskLow || r == RiskMedium || r == RiskHigh || r == RiskCritical
}

// Definition describes one version of one tool. It is data only: no handler,
// client or callback, so registering a definition can never inject code.
type Definition struct {
	Name         string        // lower-case segments joined by '.', '-' or '_', e.g. "kb.search"
	Version      string        // canonical SemVer 2.0 without build metadata, e.g. "1.2.0"
	Description  string        // 1 to MaxDescription bytes of UTF-8
	InputSchema  []byte        // JSON schema of the input, in the subset; its root is an object
	OutputSchema []byte        // JSON schema of the output; nil declares no typed output (see CanonicalOutput)
	Effect       Effect        // read, write, execute or external
	Risk         Risk          // low, medium, high or critical
	Permissions  []string      // at most MaxPermissions project permissions, besides tool.call:<name>
	Timeout      time.Duration // whole seconds, from MinTimeout to MaxTimeout
}

// Tool is a validated, frozen definition with its compiled schemas. It is
// safe for concurrent use.
type Tool struct {
	name, version, description string
	effect                     Effect
	risk                       Risk
	permissions                []string // sorted
	callPermissions            []string // tool.call:<name>, then permissions
	timeout                    time.Duration
	inputSchema, outputSchema  []byte // canonical; outputSchema nil when absent
	input, output              *node
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.name }

// Version returns the tool's exact version.
func (t *Tool) Version() string { return t.version }

// Description returns the tool's description.
func (t *Tool) Description() string { return t.description }

// Effect returns the tool's effect.
func (t *Tool) Effect() Effect { return t.effect }

// Risk returns the tool's risk.
func (t *Tool) Risk() Risk { return t.risk }

// Timeout returns the tool's timeout.
func (t *Tool) Timeout() time.Duration { return t.timeout }

// Permissions returns a copy of the required permissions, sorted, without
// the implicit tool.call:<name>.
func (t *Tool) Permissions() []string { return slices.Clone(t.permissions) }

// InputSchema returns a copy of the canonical input schema.
func (t *Tool) InputSchema() []byte { return slices.Clone(t.inputSchema) }

// OutputSchema returns a copy of the canonical output schema, nil if the
// tool declares none.
func (t *Tool) OutputSchema() []byte { return slices.Clone(t.outputSchema) }

// HasOutputSchema reports whether the tool declares an output schema.
func (t *Tool) HasOutputSchema() bool { return t.outputSchema != nil }

// Definition returns a deep copy of the definition, with canonical schemas
// and sorted permissions.
func (t *Tool) Definition() Definition {
	return Definition{
		Name: t.name, Version: t.version, Description: t.description,
		InputSchema: t.InputSchema(), OutputSchema: t.OutputSchema(),
		Effect: t.effect, Risk: t.risk, Permissions: t.Permissions(), Timeout: t.timeout,
	}
}

// CanonicalOutput checks a tool's raw output against its output schema and
// returns its canonical bytes (at most MaxOutputBytes). An oversized output
// carries RESULT_TOO_LARGE; any other failure carries EXECUTION_FAILED.
//
// A tool without an output schema declares no typed output, so the only
// typed output it can have is null: an undeclared output is never read as an
// arbitrary value. Its raw response is not thereby refused: it stays opaque
// bytes, which a caller keeps whole and does not validate (see the package
// documentation).
func (t *Tool) CanonicalOutput(raw []byte) ([]byte, error) {
	return canonicalValue(raw, t.output, canonical.CodeExecutionFailed, maxRawOutputBytes, MaxOutputBytes, "output")
}

// canonicalInput is CanonicalOutput for inputs; only Prepare calls it, after
// the policy has allowed the call.
func (t *Tool) canonicalInput(raw []byte) ([]byte, error) {
	return canonicalValue(raw, t.input, canonical.CodeInvalidInput, maxRawInputBytes, MaxInputBytes, "input")
}

func canonicalValue(raw []byte, n *node, code canonical.Code, rawLimit, limit int, what string) ([]byte, error) {
	// An oversized input is a bad input; an oversized output is the
	// result-size failure the boundary reports for any too-large result.
	sizeCode := code
	if code == canonical.CodeExecutionFailed {
		sizeCode = canonical.CodeResultTooLarge
	}
	if len(raw) > rawLimit {
		return nil, canonical.Errorf(sizeCode, "registry: raw %s of %d bytes exceeds %d", what, len(raw), rawLimit)
	}
	v, err := parse(raw, parseOptions{maxDepth: MaxSchemaDepth, maxItems: MaxArrayItems, safeNumbers: true, code: code})
	if err != nil {
		return nil, err
	}
	if e := n.check(&v); e != nil {
		return nil, e.toError(code)
	}
	out, err := appendCanonical(make([]byte, 0, len(raw)), &v)
	if err != nil {
		return nil, canonical.Wrap(code, err, what)
	}
	if len(out) > limit {
		return nil, canonical.Errorf(sizeCode, "registry: canonical %s of %d bytes exceeds %d", what, len(out), limit)
	}
	return out, nil
}

// nullOnly is the output schema of a tool that declares none.
var nullOnly = &node{types: typeNull, minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}

// Registry is an immutable set of tool definitions, frozen at construction.
// It has no way to add, remove or replace a definition, and is safe for
// concurrent use.
type Registry struct {
	tools []*Tool // sorted by name, then version
	index map[toolKey]*Tool
}

type toolKey struct{ name, version string }

// New validates and compiles 0 to MaxDefinitions definitions into a frozen
// registry. Any invalid definition, schema outside the subset, or repeated
// (name, version) fails the whole construction with INVALID_ARGUMENT; schema
// problems are a *SchemaError naming the JSON pointer and the keyword.
func New(defs ...Definition) (*Registry, error) {
	if len(defs) > MaxDefinitions {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "registry: %d definitions exceed %d", len(defs), MaxDefinitions)
	}
	r := &Registry{tools: make([]*Tool, 0, len(defs)), index: make(map[toolKey]*Tool, len(defs))}
	for i := range defs {
		t, err := compileDefinition(&defs[i])
		if err != nil {
			return nil, err
		}
		k := toolKey{t.name, t.version}
		if r.index[k] != nil {
			return nil, canonical.Errorf(canonical.CodeInvalidArgument, "registry: %s@%s is defined twice", t.name, t.version)
		}
		r.index[k] = t
		r.tools = append(r.tools, t)
	}
	slices.SortFunc(r.tools, func(a, b *Tool) int {
		return cmp.Or(strings.Compare(a.name, b.name), strings.Compare(a.version, b.version))
	})
	return r, nil
}

// Lookup returns the tool with exactly this name and version. There is no
// "latest", range or fallback: a call names the version it was built for.
func (r *Registry) Lookup(name, version string) (*Tool, bool) {
	if r == nil {
		return nil, false
	}
	t, ok := r.index[toolKey{name, version}]
	return t, ok
}

// Tools returns the registered tools sorted by name, then version.
func (r *Registry) Tools() []*Tool {
	if r == nil {
		return nil
	}
	return slices.Clone(r.tools)
}

// Len returns the number of registered tools.
func (r *Registry) Len() int {
	if r == nil {
		return 0
	}
	return len(r.tools)
}

func invalidDef(format string, args ...any) error {
	return canonical.Errorf(canonical.CodeInvalidArgument, "registry: "+format, args...)
}

func compileDefinition(d *Definition) (*Tool, error) {
	if !ValidName(d.Name) {
		return nil, invalidDef("tool name %q is not lower-case segments joined by '.', '-' or '_'", d.Name)
	}
	if !ValidVersion(d.Version) {
		return nil, invalidDef("%s: version %q is not canonical SemVer 2.0 without build metadata", d.Name, d.Version)
	}
	id := d.Name + "@" + d.Version
	if len(d.Description) == 0 || len(d.Description) > MaxDescription || !utf8.ValidString(d.Description) {
		return nil, invalidDef("%s: description must be 1 to %d bytes of UTF-8", id, MaxDescription)
	}
	if !d.Effect.Valid() {
		return nil, invalidDef("%s: unknown effect %q", id, d.Effect)
	}
	if !d.Risk.Valid() {
		return nil, invalidDef("%s: unknown risk %q", id, d.Risk)
	}
	if d.Timeout < MinTimeout || d.Timeout > MaxTimeout || d.Timeout%time.Second != 0 {
		return nil, invalidDef("%s: timeout %v is not a whole number of seconds from 1 to 3600", id, d.Timeout)
	}
	if len(d.Permissions) > MaxPermissions {
		return nil, invalidDef("%s: %d permissions exceed %d", id, len(d.Permissions), MaxPermissions)
	}
	perms := slices.Clone(d.Permissions)
	slices.Sort(perms)
	for i, p := range perms {
		if !validPermission(p) {
			return nil, invalidDef("%s: permission %q is malformed or reserved", id, p)
		}
		if i > 0 && perms[i-1] == p {
			return nil, invalidDef("%s: permission %q is listed twice", id, p)
		}
	}
	if perms == nil {
		perms = []string{}
	}
	t := &Tool{
		name: d.Name, version: d.Version, description: d.Description,
		effect: d.Effect, risk: d.Risk, permissions: perms, timeout: d.Timeout,
		callPermissions: append([]string{CallPermissionPrefix + d.Name}, perms...),
	}
	var err error
	t.input, t.inputSchema, err = compileSchema(d.InputSchema, &compiler{strict: true, tool: id, which: "input"}, true)
	if err != nil {
		return nil, err
	}
	t.output = nullOnly
	if d.OutputSchema != nil {
		t.output, t.outputSchema, err = compileSchema(d.OutputSchema, &compiler{strict: true, tool: id, which: "output"}, false)
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}

// ValidName reports whether s is a tool name: 1 to MaxNameBytes bytes of
// lower-case ASCII letter-or-digit segments joined by single '.', '-' or '_',
// starting with a letter.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameBytes || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	prevSep := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			prevSep = false
		case c == '.' || c == '-' || c == '_':
			if prevSep {
				return false
			}
			prevSep = true
		default:
			return false
		}
	}
	return !prevSep
}

// ValidVersion reports whether s is a canonical SemVer 2.0 version:
// MAJOR.MINOR.PATCH with an optional pre-release, no leading zeros, no "v"
// prefix. Build metadata is refused because SemVer ignores it for
// precedence, so two spellings would name one version.
func ValidVersion(s string) bool {
	if len(s) == 0 || len(s) > MaxVersionBytes {
		return false
	}
	core, pre, hasPre := strings.Cut(s, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if !numericIdentifier(p) {
			return false
		}
	}
	if !hasPre {
		return true
	}
	for _, id := range strings.Split(pre, ".") {
		if id == "" {
			return false
		}
		numeric := true
		for i := 0; i < len(id); i++ {
			c := id[i]
			switch {
			case c >= '0' && c <= '9':
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '-':
				numeric = false
			default:
				return false
			}
		}
		if numeric && !numericIdentifier(id) {
			return false
		}
	}
	return true
}

func numericIdentifier(s string) bool {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// validPermission: 1 to MaxPermissionLen bytes of [a-z0-9._:-], starting with
// a letter, outside the reserved tool.call: namespace.
func validPermission(s string) bool {
	if len(s) == 0 || len(s) > MaxPermissionLen || s[0] < 'a' || s[0] > 'z' || strings.HasPrefix(s, CallPermissionPrefix) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}
