package mcpresult

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors"
	"github.com/toolcanon/toolcanon/projectors/internal/view"
)

// Media says which content blocks other than text reach the agent.
//
// Images and audio whose MIME type is listed pass whole, in order, while
// their base64 data fits MaxBytes in all; resource links pass as links;
// an embedded text resource passes as its URI and its text, redacted and
// cut like any text; an embedded binary resource passes as a link to its
// URI. Each passes as an element of "attachments", the data of images and
// audio in the "media" array that ends the result, by index:
//
//	"attachments":[{"type":"image","mimeType":"image/png","media":0},
//	               {"type":"resource_link","uri":"file:///q3.pdf","name":"q3.pdf"}],
//	"withheld":[{"type":"audio","mimeType":"audio/wav","bytes":88200,"reason":"over_budget"}],
//	…,"media":["iVBORw0KGgo…"]
//
// Whatever does not pass is named in "withheld" with its type, MIME type,
// size and reason: mime_not_allowed, over_budget, blob_sent_as_link,
// malformed, unknown_type, or too_many (past MaxBlocks).
type Media struct {
	// MaxBytes bounds the base64 bytes of the images and audio of one
	// result; 0 lets none pass (each is named in "withheld").
	MaxBytes int
	// MIMETypes lists the image and audio types that may pass; nil is
	// DefaultMIMETypes.
	MIMETypes []string
}

// DefaultMIMETypes are the image and audio types allowed by default.
var DefaultMIMETypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp", "audio/wav", "audio/mpeg", "audio/ogg"}

// Bounds of Media.
const (
	MaxMediaBytes = 16 << 20
	MaxBlocks     = 32  // content blocks other than text named or passed per result
	maxEntryBytes = 768 // one attachment or withheld entry, its data apart
)

func (m Media) validate() error {
	if m.MaxBytes < 0 || m.MaxBytes > MaxMediaBytes {
		return canonical.Errorf(canonical.CodeInvalidArgument, "mcpresult: media bytes %d outside [0, %d]", m.MaxBytes, MaxMediaBytes)
	}
	for _, t := range m.MIMETypes {
		if !strings.HasPrefix(t, "image/") && !strings.HasPrefix(t, "audio/") || len(t) > 128 || strings.ContainsAny(t, " ,;\"") {
			return canonical.Errorf(canonical.CodeInvalidArgument, "mcpresult: %q is not an image or audio MIME type", t)
		}
	}
	return nil
}

func (m Media) allowed(mime string) bool {
	types := m.MIMETypes
	if types == nil {
		types = DefaultMIMETypes
	}
	return slices.Contains(types, strings.ToLower(mime))
}

// room is what the blocks of a result may take besides the text budget.
func (m Media) room(blocks int) int {
	if blocks == 0 {
		return 0
	}
	return m.MaxBytes + min(blocks, MaxBlocks)*maxEntryBytes + len(`,"attachments":[],"withheld":[],"media":[]`)
}

// block is one content block other than text, as read.
type block struct {
	typ, mime, uri, name string
	text                 []byte // undecoded text of an embedded text resource
	data                 string // base64 of an image or audio
	blob                 bool   // an embedded binary resource
	size                 int    // bytes of data or text
	malformed            bool
}

func readBlock(elem []byte) block {
	r := gjson.ParseBytes(elem)
	b := block{typ: r.Get("type").String(), mime: r.Get("mimeType").String()}
	switch b.typ {
	case "image", "audio":
		d := r.Get("data")
		b.data, b.size = d.String(), len(d.String())
		b.malformed = d.Type != gjson.String || !base64Text(b.data)
	case "resource_link":
		b.uri, b.name = r.Get("uri").String(), r.Get("name").String()
		b.malformed = b.uri == ""
	case "resource":
		res := r.Get("resource")
		b.uri, b.mime = res.Get("uri").String(), res.Get("mimeType").String()
		if t := res.Get("text"); t.Exists() {
			raw := t.Raw
			if len(raw) >= 2 {
				b.text, b.size = view.Bytes(raw[1:len(raw)-1]), len(raw)-2
			}
		} else {
			b.blob, b.size = true, len(res.Get("blob").String())
		}
		b.malformed = b.uri == ""
	}
	return b
}

// base64Text reports whether s is standard base64 text.
func base64Text(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}

// blocks writes "attachments" and "withheld" for the blocks of a result,
// and returns the data to end it with, whose room it reserved, and whether
// how many passed, and whether anything was withheld.
func (p *Projector) blocks(w *projectors.Writer, st *state, elems [][]byte) (media []string, reserved, attachedN int, withheldAny bool) {
	var withheld []block
	var reasons []string
	budget := p.cfg.Media.MaxBytes
	attached := false
	for i, elem := range elems {
		b := readBlock(elem)
		reason := ""
		switch {
		case i >= MaxBlocks:
			reason = "too_many"
		case b.malformed:
			reason = "malformed"
		case b.typ == "image" || b.typ == "audio":
			switch {
			case !p.cfg.Media.allowed(b.mime):
				reason = "mime_not_allowed"
			case b.size > budget:
				reason = "over_budget"
			}
		case b.typ == "resource" && b.blob:
			reason = "blob_sent_as_link"
		case b.typ != "resource_link" && b.typ != "resource":
			reason = "unknown_type"
		}
		passes := reason == "" || reason == "blob_sent_as_link"
		if passes {
			if !attached {
				attached = w.Key("attachments") && w.BeginArray()
				if !attached {
					return nil, 0, 0, true
				}
			}
			m := w.Mark()
			data := b.typ == "image" || b.typ == "audio"
			if !p.attachment(w, st, b, len(media)) || data && !w.Reserve(len(b.data)+3) {
				w.Rollback(m)
				reason = "over_budget"
			} else if attachedN++; data {
				media = append(media, b.data)
				budget -= b.size
				reserved += len(b.data) + 3
			}
		}
		if reason != "" {
			withheld, reasons = append(withheld, b), append(reasons, reason)
		}
	}
	if attached {
		w.EndArray()
	}
	if len(withheld) > 0 && w.Key("withheld") && w.BeginArray() {
		for i, b := range withheld {
			m := w.Mark()
			if !p.withheldEntry(w, st, b, reasons[i]) {
				w.Rollback(m)
				w.SetTruncated()
				break
			}
		}
		w.EndArray()
	}
	return media, reserved, attachedN, len(withheld) > 0
}

func (p *Projector) attachment(w *projectors.Writer, st *state, b block, index int) bool {
	lim := p.cfg.Limits.Text
	if !w.BeginObject() {
		return false
	}
	ok := true
	switch b.typ {
	case "image", "audio":
		ok = w.Key("type") && w.String(b.typ) && w.Key("mimeType") && p.redacted(w, st, []byte(b.mime), 128, false) &&
			w.Key("media") && w.Int(int64(index))
	case "resource_link":
		ok = w.Key("type") && w.String("resource_link") && w.Key("uri") && p.redacted(w, st, []byte(b.uri), lim, false)
		if ok && b.name != "" {
			ok = w.Key("name") && p.redacted(w, st, []byte(b.name), lim, false)
		}
		if ok && b.mime != "" {
			ok = w.Key("mimeType") && p.redacted(w, st, []byte(b.mime), 128, false)
		}
	case "resource":
		if b.blob {
			ok = w.Key("type") && w.String("resource_link") && w.Key("uri") && p.redacted(w, st, []byte(b.uri), lim, false)
			break
		}
		ok = w.Key("type") && w.String("resource") && w.Key("uri") && p.redacted(w, st, []byte(b.uri), lim, false)
		if ok && b.mime != "" {
			ok = w.Key("mimeType") && p.redacted(w, st, []byte(b.mime), 128, false)
		}
		ok = ok && w.Key("text") && p.text(w, st, b.text, p.cfg.Limits.Item)
	}
	w.EndObject()
	return ok
}

func (p *Projector) withheldEntry(w *projectors.Writer, st *state, b block, reason string) bool {
	if !w.BeginObject() {
		return false
	}
	ok := w.Key("type") && p.redacted(w, st, []byte(b.typ), 64, false)
	if ok && b.mime != "" {
		ok = w.Key("mimeType") && p.redacted(w, st, []byte(b.mime), 128, false)
	}
	if ok && b.uri != "" {
		ok = w.Key("uri") && p.redacted(w, st, []byte(b.uri), p.cfg.Limits.Text, false)
	}
	ok = ok && w.Key("bytes") && w.Int(int64(b.size)) && w.Key("reason") && w.String(reason)
	w.EndObject()
	return ok
}
