package gateway

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kinds of a Draft besides a tool's ("").
const (
	DraftPrompt   = "prompt"
	DraftResource = "resource"
	DraftTemplate = "resource_template"
)

// SurfaceEntry is a prompts[] or resources[] entry of the configuration,
// as `toolcanon gateway pin` drafts it.
type SurfaceEntry struct {
	Name           string `json:"name"`
	Upstream       string `json:"upstream"`
	UpstreamPrompt string `json:"upstream_prompt,omitempty"`
	URI            string `json:"uri,omitempty"`
	URITemplate    string `json:"uri_template,omitempty"`
	Pin            string `json:"pin,omitempty"`
}

// surfaceDrafts lists the upstream's prompts, resource templates and
// resources (those it offers) and drafts an entry for each. pinned holds the
// configuration's pins by kind and upstream name.
func surfaceDrafts(ctx context.Context, u *Upstream, pinned map[[2]string]string) ([]Draft, error) {
	s, err := u.session(ctx)
	if err != nil {
		return nil, err
	}
	caps := &mcp.ServerCapabilities{}
	if ir := s.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	name := u.opts.Name
	var out []Draft
	add := func(kind, upstreamName, pin string, e SurfaceEntry) {
		d := Draft{Upstream: name, Tool: upstreamName, Pin: pin, Kind: kind, State: PinNew, Pinned: pinned[[2]string{kind, upstreamName}]}
		switch {
		case d.Pinned == "":
		case d.Pinned == pin:
			d.State = PinMatches
		default:
			d.State = PinChanged
		}
		if !surfaceName(e.Name) {
			e.Name = draftRegistryName(name, e.Name)
		}
		d.Surface = &e
		out = append(out, d)
	}
	if caps.Prompts != nil {
		err := listInto(ctx, s.Prompts(ctx, nil), func(p *mcp.Prompt) {
			pin, err := PromptDigest(p)
			d := SurfaceEntry{Name: p.Name, Upstream: name, UpstreamPrompt: p.Name, Pin: pin}
			add(DraftPrompt, p.Name, pin, d)
			if err != nil {
				out[len(out)-1].Problem = "the definition cannot be pinned: " + errMsg(err)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	if caps.Resources != nil {
		err := listInto(ctx, s.ResourceTemplates(ctx, nil), func(t *mcp.ResourceTemplate) {
			pin, err := TemplateDigest(t)
			add(DraftTemplate, t.URITemplate, pin, SurfaceEntry{Name: t.Name, Upstream: name, URITemplate: t.URITemplate, Pin: pin})
			if err != nil {
				out[len(out)-1].Problem = "the definition cannot be pinned: " + errMsg(err)
			}
		})
		if err == nil {
			err = listInto(ctx, s.Resources(ctx, nil), func(r *mcp.Resource) {
				add(DraftResource, r.URI, "", SurfaceEntry{Name: r.Name, Upstream: name, URI: r.URI})
			})
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// uniqueSurfaceNames gives each drafted prompt, and each drafted resource,
// a name no other entry of its kind has, suffixing a number.
func uniqueSurfaceNames(ds []Draft) {
	seen := map[string]bool{}
	for i := range ds {
		e := ds[i].Surface
		if e == nil {
			continue
		}
		group := "prompt:"
		if ds[i].Kind != DraftPrompt {
			group = "resource:"
		}
		base := e.Name
		for n := 2; seen[group+e.Name]; n++ {
			e.Name = base + "-" + strconv.Itoa(n)
		}
		seen[group+e.Name] = true
	}
}

// surfaceKey is how DraftConfig matches a configured prompt or resource
// with a draft: kind and upstream name (prompt name, URI or template).
func surfaceKey(e SurfaceEntry) [3]string {
	switch {
	case e.UpstreamPrompt != "":
		return [3]string{DraftPrompt, e.Upstream, e.UpstreamPrompt}
	case e.URITemplate != "":
		return [3]string{DraftTemplate, e.Upstream, e.URITemplate}
	}
	return [3]string{DraftResource, e.Upstream, e.URI}
}

// keptSurface reads the prompts and resources entries of a configuration
// file, by surfaceKey.
func keptSurface(root *jnode) map[[3]string]json.RawMessage {
	kept := map[[3]string]json.RawMessage{}
	for _, member := range []string{"prompts", "resources"} {
		n := root.member(member)
		if n == nil {
			continue
		}
		for _, e := range n.elems {
			var se SurfaceEntry
			if json.Unmarshal(e.raw, &se) == nil {
				kept[surfaceKey(se)] = e.raw
			}
		}
	}
	return kept
}
