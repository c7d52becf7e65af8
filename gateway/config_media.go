package gateway

import (
	"strings"

	"github.com/toolcanon/toolcanon/projectors/mcpresult"
)

// media reads a projector's "media": {"max_bytes": N, "mime_types": […]}.
func (c *cfgParser) media(n *jnode, ptr, kind string) (mcpresult.Media, error) {
	var m mcpresult.Media
	if kind != "mcp" {
		return m, c.fail(n, ptr, `remove it, or set "kind" to mcp`, "media applies to the mcp projector only")
	}
	if err := c.obj(n, ptr, "max_bytes", "mime_types"); err != nil {
		return m, err
	}
	if v := n.member("max_bytes"); v != nil {
		x, err := c.int(v, ptr+"/max_bytes", 0, mcpresult.MaxMediaBytes, "give the base64 bytes of images and audio one result may carry, up to 16 MiB")
		if err != nil {
			return m, err
		}
		m.MaxBytes = int(x)
	}
	if v := n.member("mime_types"); v != nil {
		mimeOK := func(s string) bool {
			return (strings.HasPrefix(s, "image/") || strings.HasPrefix(s, "audio/")) && len(s) <= 128 && !strings.ContainsAny(s, " ,;\"") && strings.ToLower(s) == s
		}
		types, err := c.strList(v, ptr+"/mime_types", 64, `list image and audio types such as "image/png"`, mimeOK)
		if err != nil {
			return m, err
		}
		m.MIMETypes = types
	}
	return m, nil
}
