package gateway

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/yosida95/uritemplate/v3"

	"github.com/toolcanon/toolcanon/projectors/mcpresult"
)

// Bounds of the prompts and resources a configuration exposes.
const (
	MaxPrompts   = 256
	MaxResources = 256
	// DefaultSurfaceTextBytes bounds the text of one prompt or resource
	// result (after redaction), when its entry says nothing else.
	DefaultSurfaceTextBytes = 64 << 10
	// MaxSurfaceTextBytes is the largest text budget an entry may set.
	MaxSurfaceTextBytes = 1 << 20
	maxURIBytes         = 2048
)

// The permissions the policy is asked for a prompt and a resource, besides
// registry.CallPermissionPrefix for tools.
const (
	PromptPermissionPrefix   = "prompt.get:"
	ResourcePermissionPrefix = "resource.read:"
)

// PromptConfig is one exposed upstream prompt.
type PromptConfig struct {
	Name           string // what agents get it as; the policy is asked for prompt.get:<Name>
	Upstream       string // upstream name
	UpstreamPrompt string // the prompt's name on the upstream
	Pin            string // PromptDigest of its definition as reviewed
	Limits         SurfaceLimits
}

// ResourceConfig is one exposed upstream resource (URI) or resource
// template (URITemplate, every URI it matches).
type ResourceConfig struct {
	Name        string // names it in grants: the policy is asked for resource.read:<Name>
	Upstream    string // upstream name
	URI         string // a resource: its URI, exactly
	URITemplate string // a template (RFC 6570)
	Pin         string // templates: TemplateDigest of the definition as reviewed
	Limits      SurfaceLimits

	tmpl *uritemplate.Template
}

// SurfaceLimits bound what one prompt or resource result passes to the
// agent: its text (redacted, then cut) and its images and audio (as a tool
// projector's media).
type SurfaceLimits struct {
	TextBytes int             // 0: DefaultSurfaceTextBytes
	Media     mcpresult.Media // images, audio and binary contents that pass; none by default
}

func (l SurfaceLimits) text() int {
	if l.TextBytes <= 0 {
		return DefaultSurfaceTextBytes
	}
	return l.TextBytes
}

// surfaceName: 1-128 bytes of [a-z0-9_.-] starting with a letter or digit,
// so that a grant can name it (grant patterns are lower case).
func surfaceName(s string) bool {
	if len(s) == 0 || len(s) > 128 || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// validURI: 1 to 2048 printable ASCII bytes and a scheme, as a resource URI
// is written.
func validURI(s string) bool {
	i := strings.Index(s, ":")
	return len(s) <= maxURIBytes && i > 0 && printableNoSpace(s)
}

func (c *cfgParser) surfaceLimits(n *jnode, ptr string) (SurfaceLimits, error) {
	var l SurfaceLimits
	if v := n.member("max_text_bytes"); v != nil {
		x, err := c.int(v, ptr+"/max_text_bytes", 256, MaxSurfaceTextBytes, "give the text bytes one result may pass, from 256 to 1048576")
		if err != nil {
			return l, err
		}
		l.TextBytes = int(x)
	}
	if v := n.member("media"); v != nil {
		var err error
		if l.Media, err = c.media(v, ptr+"/media", "mcp"); err != nil {
			return l, err
		}
	}
	return l, nil
}

func (c *cfgParser) prompts(n *jnode, ptr string, cfg *Config) ([]PromptConfig, error) {
	if n.kind != jArray || len(n.elems) > MaxPrompts {
		return nil, c.fail(n, ptr, "list the upstream prompts to expose; `toolcanon gateway pin` drafts them", "expected an array of at most %d prompts", MaxPrompts)
	}
	out := make([]PromptConfig, 0, len(n.elems))
	for i, e := range n.elems {
		p := ptr + "/" + strconv.Itoa(i)
		if err := c.obj(e, p, "name", "upstream", "upstream_prompt", "pin", "max_text_bytes", "media"); err != nil {
			return nil, err
		}
		var pc PromptConfig
		var err error
		if pc.Name, err = c.surfaceName(e, p, "prompt"); err != nil {
			return nil, err
		}
		if pc.Upstream, err = c.surfaceUpstream(e, p, cfg); err != nil {
			return nil, err
		}
		v, err := c.required(e, p, "upstream_prompt", `add "upstream_prompt": the prompt's name on the upstream`)
		if err != nil {
			return nil, err
		}
		if pc.UpstreamPrompt, err = c.str(v, p+"/upstream_prompt", "give the prompt's name on the upstream"); err != nil {
			return nil, err
		}
		if pc.UpstreamPrompt == "" || len(pc.UpstreamPrompt) > 128 {
			return nil, c.fail(v, p+"/upstream_prompt", "give the prompt's name on the upstream", "the upstream prompt name must be 1-128 bytes")
		}
		if pc.Pin, err = c.surfacePin(e, p); err != nil {
			return nil, err
		}
		if pc.Limits, err = c.surfaceLimits(e, p); err != nil {
			return nil, err
		}
		for j, prev := range out {
			switch {
			case prev.Name == pc.Name:
				return nil, c.fail(e, p+"/name", "give each exposed prompt its own name", "the name %q is already used by %s/%d", pc.Name, ptr, j)
			case prev.Upstream == pc.Upstream && prev.UpstreamPrompt == pc.UpstreamPrompt && prev.Pin != pc.Pin:
				return nil, c.fail(e, p+"/pin", "pin the prompt once", "upstream %q prompt %q is pinned differently by %s/%d", pc.Upstream, pc.UpstreamPrompt, ptr, j)
			}
		}
		out = append(out, pc)
	}
	return out, nil
}

func (c *cfgParser) resources(n *jnode, ptr string, cfg *Config) ([]ResourceConfig, error) {
	if n.kind != jArray || len(n.elems) > MaxResources {
		return nil, c.fail(n, ptr, "list the upstream resources and resource templates to expose; `toolcanon gateway pin` drafts them", "expected an array of at most %d resources", MaxResources)
	}
	out := make([]ResourceConfig, 0, len(n.elems))
	for i, e := range n.elems {
		p := ptr + "/" + strconv.Itoa(i)
		if err := c.obj(e, p, "name", "upstream", "uri", "uri_template", "pin", "max_text_bytes", "media"); err != nil {
			return nil, err
		}
		var rc ResourceConfig
		var err error
		if rc.Name, err = c.surfaceName(e, p, "resource"); err != nil {
			return nil, err
		}
		if rc.Upstream, err = c.surfaceUpstream(e, p, cfg); err != nil {
			return nil, err
		}
		uri, tmpl := e.member("uri"), e.member("uri_template")
		switch {
		case (uri == nil) == (tmpl == nil):
			return nil, c.fail(e, p, `give either "uri": "file:///…" or "uri_template": "file:///{path}"`, "a resource has exactly one of uri and uri_template")
		case uri != nil:
			const fix = `give the resource's URI as the upstream lists it, such as "file:///srv/kb/README.md"`
			if rc.URI, err = c.str(uri, p+"/uri", fix); err != nil {
				return nil, err
			}
			if !validURI(rc.URI) {
				return nil, c.fail(uri, p+"/uri", fix, "%q is not a URI of at most %d printable characters", rc.URI, maxURIBytes)
			}
			if v := e.member("pin"); v != nil {
				return nil, c.fail(v, p+"/pin", "remove it: a resource is named by its URI, which the configuration fixes", "only a resource template is pinned")
			}
		default:
			const fix = `give the template as the upstream lists it, such as "file:///{path}"`
			if rc.URITemplate, err = c.str(tmpl, p+"/uri_template", fix); err != nil {
				return nil, err
			}
			if !validURI(rc.URITemplate) {
				return nil, c.fail(tmpl, p+"/uri_template", fix, "%q is not a URI template of at most %d printable characters", rc.URITemplate, maxURIBytes)
			}
			if rc.tmpl, err = uritemplate.New(rc.URITemplate); err != nil {
				return nil, c.fail(tmpl, p+"/uri_template", fix, "%q is not an RFC 6570 template: %v", rc.URITemplate, err)
			}
			if rc.Pin, err = c.surfacePin(e, p); err != nil {
				return nil, err
			}
		}
		if rc.Limits, err = c.surfaceLimits(e, p); err != nil {
			return nil, err
		}
		for j, prev := range out {
			switch {
			case prev.Name == rc.Name:
				return nil, c.fail(e, p+"/name", "give each exposed resource its own name", "the name %q is already used by %s/%d", rc.Name, ptr, j)
			case rc.URI != "" && prev.URI == rc.URI:
				return nil, c.fail(e, p+"/uri", "list each URI once", "the URI %q is already exposed by %s/%d", rc.URI, ptr, j)
			case rc.URITemplate != "" && prev.URITemplate == rc.URITemplate:
				return nil, c.fail(e, p+"/uri_template", "list each template once", "the template %q is already exposed by %s/%d", rc.URITemplate, ptr, j)
			}
		}
		out = append(out, rc)
	}
	return out, nil
}

func (c *cfgParser) surfaceName(n *jnode, ptr, what string) (string, error) {
	fix := fmt.Sprintf(`add "name": the %s's name in grants (%s), 1-128 characters of [a-z0-9_.-]`, what, map[string]string{"prompt": PromptPermissionPrefix, "resource": ResourcePermissionPrefix}[what]+"<name>")
	v, err := c.required(n, ptr, "name", fix)
	if err != nil {
		return "", err
	}
	s, err := c.str(v, ptr+"/name", fix)
	if err != nil {
		return "", err
	}
	if !surfaceName(s) {
		return "", c.fail(v, ptr+"/name", "use 1-128 characters of [a-z0-9_.-], starting with a letter or digit", "%q is not a %s name", s, what)
	}
	return s, nil
}

func (c *cfgParser) surfaceUpstream(n *jnode, ptr string, cfg *Config) (string, error) {
	v, err := c.required(n, ptr, "upstream", "name one of the upstreams")
	if err != nil {
		return "", err
	}
	s, err := c.str(v, ptr+"/upstream", "name one of the upstreams")
	if err != nil {
		return "", err
	}
	if _, ok := cfg.Upstreams[s]; !ok {
		return "", c.fail(v, ptr+"/upstream", "name one of: "+strings.Join(sortedNames(cfg.Upstreams), ", "), "there is no upstream %q", s)
	}
	return s, nil
}

func (c *cfgParser) surfacePin(n *jnode, ptr string) (string, error) {
	const fix = "run `toolcanon gateway pin --config FILE`, review the definition, and paste its pin"
	v, err := c.required(n, ptr, "pin", fix)
	if err != nil {
		return "", err
	}
	s, err := c.str(v, ptr+"/pin", fix)
	if err != nil {
		return "", err
	}
	if !validPin(s) {
		return "", c.fail(v, ptr+"/pin", fix, "%q is not a pin (sha256: and 64 hex digits)", s)
	}
	return s, nil
}
