package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/registry"
)

// Pin states of a Draft against the configuration.
const (
	PinNew     = "new"     // the configuration does not expose the tool
	PinMatches = "pinned"  // the configuration's pin matches the tool
	PinChanged = "changed" // the configuration's pin differs: review the change before pinning again
)

// Draft is what `toolcanon gateway pin` prints for one upstream tool: its
// digest and a draft configuration entry in the bounded subset, for an
// operator to review and paste. Nothing is ever pinned automatically.
type Draft struct {
	Upstream string
	Tool     string // the tool's name on the upstream (a prompt's name, a resource's URI, a template)
	// Kind is "" for a tool, else DraftPrompt, DraftResource or
	// DraftTemplate; those carry Surface in place of Entry.
	Kind   string
	Pin    string // its digest now; "" when it cannot be pinned
	State  string // PinNew, PinMatches or PinChanged
	Pinned string // the configuration's pin, when it has one
	// Problem says why the draft cannot be used as it is: the input
	// schema is outside the bounded subset (no maxLength, an open object,
	// $ref…), or the definition cannot be pinned.
	Problem string
	// Notes lists every change the draft made to the upstream's input
	// schema to bring it into the subset, each with its JSON pointer; those
	// marked Refused are features the subset cannot express.
	Notes   []SchemaNote
	Entry   DraftEntry
	Surface *SurfaceEntry // a prompt's or resource's entry
}

// DraftEntry is a tools[] entry of the configuration. Unbounded carries the
// Problem, so that a draft pasted before it is fixed is refused.
type DraftEntry struct {
	Name         string          `json:"name"`
	Upstream     string          `json:"upstream"`
	UpstreamTool string          `json:"upstream_tool"`
	Pin          string          `json:"pin"`
	Definition   DraftDefinition `json:"definition"`
	Unbounded    string          `json:"unbounded,omitempty"`
}

// DraftDefinition is the registry definition of a DraftEntry.
type DraftDefinition struct {
	Name        string          `json:"name"`
	Version     string          `json:"version"`
	Description string          `json:"description"`
	Effect      string          `json:"effect"`
	Risk        string          `json:"risk"`
	Timeout     string          `json:"timeout"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Drafts connects to every upstream of cfg (cfg may list no tools yet, see
// LoadPinConfig) and returns a draft for each tool it lists, ordered by
// upstream and tool name. An upstream that cannot be reached fails the
// whole call.
func Drafts(ctx context.Context, cfg *Config, opts OpenOptions) ([]Draft, error) {
	pinned := map[[2]string]string{}
	for _, t := range cfg.Tools {
		pinned[[2]string{t.Upstream, t.UpstreamTool}] = t.Pin
	}
	surfacePinned := map[string]map[[2]string]string{}
	for _, p := range cfg.Prompts {
		if surfacePinned[p.Upstream] == nil {
			surfacePinned[p.Upstream] = map[[2]string]string{}
		}
		surfacePinned[p.Upstream][[2]string{DraftPrompt, p.UpstreamPrompt}] = p.Pin
	}
	for _, r := range cfg.Resources {
		if surfacePinned[r.Upstream] == nil {
			surfacePinned[r.Upstream] = map[[2]string]string{}
		}
		if r.URITemplate != "" {
			surfacePinned[r.Upstream][[2]string{DraftTemplate, r.URITemplate}] = r.Pin
		}
	}
	var out, surf []Draft
	for _, name := range sortedNames(cfg.Upstreams) {
		uc := cfg.Upstreams[name]
		o := OpenOptions{UpstreamStderr: opts.UpstreamStderr, ConnectTimeout: opts.ConnectTimeout, Logger: opts.Logger}
		single := &Config{Upstreams: map[string]UpstreamConfig{name: uc}}
		ups, err := newUpstreams(single, o, nil)
		if err != nil {
			return nil, err
		}
		u := ups[name]
		tools, err := u.List(ctx)
		var sd []Draft
		if err == nil {
			sd, err = surfaceDrafts(ctx, u, surfacePinned[name])
		}
		_ = u.Close()
		if err != nil {
			return nil, err
		}
		surf = append(surf, sd...)
		for _, t := range tools {
			if t == nil {
				continue
			}
			out = append(out, draft(name, t, pinned[[2]string{name, t.Name}]))
		}
	}
	// Two upstreams may list the same name: agents then call each by its
	// registry name.
	seen := map[string]int{}
	for _, d := range out {
		seen[d.Entry.Name]++
	}
	for i := range out {
		if seen[out[i].Entry.Name] > 1 {
			out[i].Entry.Name = out[i].Entry.Definition.Name
		}
	}
	uniqueSurfaceNames(surf)
	return append(out, surf...), nil
}

func draft(upstream string, t *mcp.Tool, pinned string) Draft {
	d := Draft{Upstream: upstream, Tool: t.Name, Pinned: pinned, State: PinNew}
	pin, err := Digest(t)
	if err != nil {
		d.Problem = "the definition cannot be pinned: " + errMsg(err)
	}
	d.Pin = pin
	switch {
	case pinned == "":
	case pinned == pin:
		d.State = PinMatches
	default:
		d.State = PinChanged
	}
	schema, notes := narrowSchema(t.InputSchema)
	d.Notes = notes
	def := registry.Definition{
		Name: draftRegistryName(upstream, t.Name), Version: "1.0.0", Description: t.Description,
		Effect: registry.EffectWrite, Risk: registry.RiskHigh, Timeout: 30 * time.Second, InputSchema: schema,
	}
	if t.Annotations != nil && t.Annotations.ReadOnlyHint {
		def.Effect, def.Risk = registry.EffectRead, registry.RiskLow
	}
	if def.Description == "" {
		def.Description = "Upstream tool " + t.Name + "."
	}
	if _, err := registry.New(def); err != nil && d.Problem == "" {
		var se *registry.SchemaError
		if errors.As(err, &se) {
			d.Problem = fmt.Sprintf("the input schema is not in the bounded subset: at %q, keyword %q: %s", pointerOrRoot(se.Path), se.Keyword, se.Reason)
		} else {
			d.Problem = strings.TrimPrefix(errMsg(err), "registry: ")
		}
	}
	if refused := notesText(notes); refused != "" && d.Problem == "" {
		d.Problem = "the upstream's input schema has features the subset cannot express, and the draft's is narrowed: " + refused +
			"; review the draft's input_schema, then delete this member"
	}
	name := t.Name
	if canonical.ValidateToolName(name) != nil {
		name = def.Name
	}
	d.Entry = DraftEntry{
		Name: name, Upstream: upstream, UpstreamTool: t.Name, Pin: pin, Unbounded: d.Problem,
		Definition: DraftDefinition{
			Name: def.Name, Version: def.Version, Description: def.Description, Effect: string(def.Effect),
			Risk: string(def.Risk), Timeout: "30s", InputSchema: schema,
		},
	}
	return d
}

// draftRegistryName makes a registry name of an upstream and tool name:
// lower-case letters and digits, runs of anything else folded into one
// separator, starting with a letter.
func draftRegistryName(upstream, tool string) string {
	var b strings.Builder
	prevSep := true // no separator at the start
	for _, c := range strings.ToLower(upstream + "." + tool) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9' && b.Len() > 0:
			b.WriteRune(c)
			prevSep = false
		case c >= '0' && c <= '9':
			b.WriteString("t" + string(c))
			prevSep = false
		case !prevSep:
			if c == '.' {
				b.WriteByte('.')
			} else {
				b.WriteByte('_')
			}
			prevSep = true
		}
		if b.Len() >= registry.MaxNameBytes {
			break
		}
	}
	s := strings.TrimRight(b.String(), "._")
	if len(s) > registry.MaxNameBytes {
		s = strings.TrimRight(s[:registry.MaxNameBytes], "._")
	}
	if !registry.ValidName(s) {
		return "upstream.tool"
	}
	return s
}

// DraftConfig returns the configuration file that `toolcanon gateway pin`
// prints: file's members as written, with "tools" holding, for each draft,
// the file's own entry when it still matches its pin and the draft's entry
// otherwise. A file without "identity" or "policy" gets draft ones: the
// project "default", the principal "local-agent", and a grant of each read
// tool by its registry name (tool.call:<definition.name>, the permission
// the policy is asked; none when no tool is a read). file must be a
// configuration LoadPinConfig accepted. The result is accepted by
// ParseConfig unless a draft has a Problem, whose entry carries
// "unbounded" until it is reviewed.
func DraftConfig(file []byte, drafts []Draft) ([]byte, error) {
	root, err := parseTree(file)
	if err != nil || root.kind != jObject {
		return nil, canonical.Errorf(canonical.CodeInvalidArgument, "gateway: the configuration is not a JSON object")
	}
	kept := map[[2]string]json.RawMessage{}
	if tools := root.member("tools"); tools != nil {
		for _, e := range tools.elems {
			up, ut := e.member("upstream"), e.member("upstream_tool")
			if up != nil && ut != nil {
				kept[[2]string{up.str, ut.str}] = e.raw
			}
		}
	}
	entries := make([]json.RawMessage, 0, len(drafts))
	var reads []string
	keptSurf := keptSurface(root)
	var prompts, resources []json.RawMessage
	for _, d := range drafts {
		if e := d.Surface; e != nil {
			raw, ok := keptSurf[surfaceKey(*e)]
			// A resource has no pin: the file's entry, when it has one, is kept.
			if !ok || d.State != PinMatches && d.Kind != DraftResource {
				b, err := json.Marshal(e)
				if err != nil {
					return nil, canonical.Wrap(canonical.CodeInvalidArgument, err, "gateway: drafting an entry")
				}
				raw = b
				if d.Problem == "" {
					perm := ResourcePermissionPrefix + e.Name
					if d.Kind == DraftPrompt {
						perm = PromptPermissionPrefix + e.Name
					}
					reads = append(reads, perm)
				}
			}
			if d.Kind == DraftPrompt {
				prompts = append(prompts, raw)
			} else {
				resources = append(resources, raw)
			}
			continue
		}
		if raw, ok := kept[[2]string{d.Upstream, d.Tool}]; ok && d.State == PinMatches {
			entries = append(entries, raw)
			continue
		}
		b, err := marshalEntry(d.Entry)
		if err != nil {
			return nil, err
		}
		entries = append(entries, b)
		if d.Entry.Definition.Effect == string(registry.EffectRead) && d.Problem == "" {
			reads = append(reads, registry.CallPermissionPrefix+d.Entry.Definition.Name)
		}
	}
	members := map[string]json.RawMessage{}
	for i, k := range root.keys {
		members[k] = root.vals[i].raw
	}
	project := "default"
	if members["identity"] == nil {
		members["identity"] = json.RawMessage(`{"project": "default", "principal": "local-agent"}`)
	} else if p := root.member("identity").member("project"); p != nil {
		project = p.str
	}
	if members["policy"] == nil && len(reads) > 0 {
		members["policy"], _ = json.Marshal(map[string]any{"grants": []map[string]any{{
			"principals": []string{"*"}, "projects": []string{project}, "allow": reads,
		}}})
	}
	tools, _ := json.Marshal(entries)
	members["tools"] = tools
	if len(prompts) > 0 {
		members["prompts"], _ = json.Marshal(prompts)
	}
	if len(resources) > 0 {
		members["resources"], _ = json.Marshal(resources)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for _, k := range []string{"upstreams", "identity", "run", "tools", "prompts", "resources", "policy", "progress", "http", "redis"} {
		if members[k] == nil {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(strconv.Quote(k) + ":")
		b.Write(members[k])
	}
	b.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, canonical.Wrap(canonical.CodeInvalidArgument, err, "gateway: drafting the configuration")
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// marshalEntry writes an entry without HTML escaping, as an operator reads it.
func marshalEntry(e DraftEntry) ([]byte, error) {
	b, err := marshalVerbatim(e)
	if err != nil {
		return nil, canonical.Wrap(canonical.CodeInvalidArgument, err, "gateway: drafting a tool entry")
	}
	return b, nil
}
