package gateway

import (
	"slices"
	"strconv"

	"github.com/toolcanon/toolcanon/boundary"
	"github.com/toolcanon/toolcanon/canonical"
)

// HandlesConfig is the "handles" object: how values masked in what agents
// read become handles, and where a handle an agent passes back may be
// resolved (see boundary.HandlePolicy). A tool's handle group is its
// "group", by default its upstream's name: a value flows back into the
// tools of the upstream it came from, and nowhere else unless Flows says.
type HandlesConfig struct {
	Off   bool                // "off": mask with the class alone (<SECRET>), resolve nothing
	Flows map[string][]string // "flows": group -> the other groups its values may flow into
	Sinks []string            // "sinks": tools no handle is ever resolved into
}

// groupOf is a configured tool's handle group.
func (t ToolConfig) groupOf() string {
	if t.Group != "" {
		return t.Group
	}
	return t.Upstream
}

// handles reads the "handles" object, once the tools are known: every group
// a flow names is some tool's, every sink a listed tool.
func (c *cfgParser) handles(n *jnode, ptr string, cfg *Config) (HandlesConfig, error) {
	var h HandlesConfig
	if err := c.obj(n, ptr, "off", "flows", "sinks"); err != nil {
		return h, err
	}
	if v := n.member("off"); v != nil {
		if v.kind != jBool {
			return h, c.fail(v, ptr+"/off", "write true or false", "expected a boolean, found %s", v.kind)
		}
		h.Off = v.str == "true"
	}
	groups, tools := []string{}, []string{}
	for _, t := range cfg.Tools {
		if g := t.groupOf(); !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
		tools = append(tools, t.Name)
	}
	slices.Sort(groups)
	isGroup := func(s string) bool { return slices.Contains(groups, s) }
	groupFix := "name a tool's group (its \"group\", else its upstream's name)"
	if len(groups) > 0 {
		groupFix += "; the groups are: " + joinQuoted(groups)
	}
	if v := n.member("flows"); v != nil {
		if v.kind != jObject {
			return h, c.fail(v, ptr+"/flows", `write {"group": ["other group", …]}`, "expected an object, found %s", v.kind)
		}
		h.Flows = map[string][]string{}
		for i, from := range v.keys {
			p := ptr + "/flows/" + escapePointer(from)
			if !isGroup(from) {
				return h, c.fail(v.vals[i], p, groupFix, "there is no group %q", from)
			}
			to, err := c.strList(v.vals[i], p, len(groups), groupFix, isGroup)
			if err != nil {
				return h, err
			}
			h.Flows[from] = to
		}
	}
	if v := n.member("sinks"); v != nil {
		sinks, err := c.strList(v, ptr+"/sinks", MaxTools, "name tools of the configuration (their agent-facing \"name\")",
			func(s string) bool { return slices.Contains(tools, s) })
		if err != nil {
			return h, err
		}
		h.Sinks = sinks
	}
	return h, nil
}

// handleOptions are the boundary's options of the configuration's handles.
func (cfg *Config) handleOptions() []boundary.Option {
	if cfg.Handles.Off {
		return []boundary.Option{boundary.WithoutHandles()}
	}
	byGroup := map[string][]string{}
	for _, t := range cfg.Tools {
		byGroup[t.groupOf()] = append(byGroup[t.groupOf()], t.Name)
	}
	opts := make([]boundary.Option, 0, len(byGroup)+1)
	for g, names := range byGroup {
		opts = append(opts, boundary.Group(g, names...))
	}
	return append(opts, boundary.WithHandlePolicy(boundary.HandlePolicy{Flows: cfg.Handles.Flows, Sinks: cfg.Handles.Sinks}))
}

// validGroup reports whether s can name a handle group: a tool name's alphabet.
func validGroup(s string) bool { return canonical.ValidateToolName(s) == nil }

func joinQuoted(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ", "
		}
		out += strconv.Quote(s)
	}
	return out
}
