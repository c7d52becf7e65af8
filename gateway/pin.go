package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	Tool     string // the tool's name on the upstream
	Pin      string // its digest now; "" when it cannot be pinned
	State    string // PinNew, PinMatches or PinChanged
	Pinned   string // the configuration's pin, when it has one
	// Problem says why the draft cannot be used as it is: the input
	// schema is outside the bounded subset (no maxLength, an open object,
	// $ref…), or the definition cannot be pinned.
	Problem string
	Entry   DraftEntry
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
	var out []Draft
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
		_ = u.Close()
		if err != nil {
			return nil, err
		}
		for _, t := range tools {
			if t == nil {
				continue
			}
			out = append(out, draft(name, t, pinned[[2]string{name, t.Name}]))
		}
	}
	return out, nil
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
	schema, _ := json.Marshal(t.InputSchema)
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
