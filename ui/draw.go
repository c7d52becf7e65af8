package ui

import (
	"fmt"
	"html/template"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolcanon/toolcanon/canonical"
	"github.com/toolcanon/toolcanon/projectors/redact"
)

// capped returns b as text, cut to at most n bytes at a rune boundary, and
// whether it was cut. Invalid UTF-8 shows as U+FFFD.
func capped(b []byte, n int) (string, bool) {
	cut := len(b) > n
	if cut {
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		b = b[:n]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), cut
}

// redacted returns b through the redactor, then capped at n bytes: the
// whole payload is redacted first, so that a cut never splits a secret the
// redactor would have recognised.
func redacted(b []byte, n int) (string, bool) {
	if len(b) == 0 {
		return "", false
	}
	return capped(redact.AppendRedacted(nil, b), n)
}

// timeline is the SVG drawing of a page's calls: a bar per call from its
// begin to its completion (to now while in flight).
type timeline struct {
	Width, Height int
	Bars          []timelineBar
	Span          string // the time the drawing covers
}

type timelineBar struct {
	X, Y, W, H float64
	Class      string
	Label      string
}

// Timeline layout, in SVG units.
const (
	tlWidth  = 600
	tlRow    = 6
	tlGap    = 2
	tlMaxRow = 120
)

// drawTimeline lays out at most tlMaxRow calls, by begin time.
func drawTimeline(calls []callRow, now time.Time) timeline {
	var live []callRow
	for _, c := range calls {
		if !c.Gone && !c.Created.IsZero() {
			live = append(live, c)
		}
	}
	sort.SliceStable(live, func(i, j int) bool { return live[i].Created.Before(live[j].Created) })
	live = live[:min(len(live), tlMaxRow)]
	t := timeline{Width: tlWidth}
	if len(live) == 0 {
		return t
	}
	first, last := live[0].Created, live[0].Created
	for _, c := range live {
		if end := c.Created.Add(c.Duration); end.After(last) {
			last = end
		}
	}
	span := max(last.Sub(first), time.Millisecond)
	scale := float64(tlWidth) / float64(span)
	for i, c := range live {
		x := float64(c.Created.Sub(first)) * scale
		w := max(float64(c.Duration)*scale, 2)
		t.Bars = append(t.Bars, timelineBar{X: x, Y: float64(i * (tlRow + tlGap)), W: min(w, tlWidth-x+2), H: tlRow,
			Class: outcomeClass(c), Label: fmt.Sprintf("%s %s %s", c.ToolCallID, outcomeName(c), c.Duration.Round(time.Millisecond))})
	}
	t.Height = len(live) * (tlRow + tlGap)
	t.Span = span.Round(time.Millisecond).String()
	return t
}

// outcomeBar is one segment of the bar of outcome codes.
type outcomeBar struct {
	Name  string
	Class string
	Count int
	X, W  float64 // percent of the bar
}

// outcomes counts a page's calls by outcome.
func outcomes(calls []callRow) []outcomeBar {
	counts := map[string]*outcomeBar{}
	for _, c := range calls {
		n := outcomeName(c)
		if counts[n] == nil {
			counts[n] = &outcomeBar{Name: n, Class: outcomeClass(c)}
		}
		counts[n].Count++
	}
	out := make([]outcomeBar, 0, len(counts))
	for _, b := range counts {
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Name < out[j].Name
	})
	x := 0.0
	for i := range out {
		out[i].X = x
		out[i].W = 100 * float64(out[i].Count) / float64(len(calls))
		x += out[i].W
	}
	return out
}

// outcome is a call's outcome (its error code, its evidence, or its
// status) and the CSS class that colours it.
func outcome(c callRow) (name, class string) {
	switch {
	case c.Gone:
		return "EXPIRED", "o-gone"
	case c.Status == canonical.StatusProjecting && c.Expired:
		return "LEASE_PASSED", "o-stuck"
	case c.Status == canonical.StatusProjecting:
		return "PROJECTING", "o-run"
	case c.Code != "":
		return string(c.Code), "o-err"
	case c.Evidence == canonical.NoEvidence:
		return string(c.Evidence), "o-none"
	}
	return string(c.Evidence), "o-ok"
}

func outcomeName(c callRow) string  { n, _ := outcome(c); return n }
func outcomeClass(c callRow) string { _, k := outcome(c); return k }

// funcs are the templates' helpers; each returns text that html/template
// then escapes.
var funcs = template.FuncMap{
	"bytes": func(n any) string {
		var v int64
		switch x := n.(type) {
		case int:
			v = int64(x)
		case int64:
			v = x
		}
		switch {
		case v >= 1<<20:
			return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20))
		case v >= 1<<10:
			return fmt.Sprintf("%.1f KiB", float64(v)/(1<<10))
		}
		return fmt.Sprintf("%d B", v)
	},
	"dur": func(d time.Duration) string {
		switch {
		case d <= 0:
			return "0s"
		case d < time.Second:
			return d.Round(time.Millisecond).String()
		}
		return d.Round(time.Second).String()
	},
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000Z")
	},
	"tsShort": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.UTC().Format("01-02 15:04:05Z")
	},
	"pct": func(used, limit int64) string {
		if limit <= 0 {
			return ""
		}
		return fmt.Sprintf("%.0f%%", 100*float64(used)/float64(limit))
	},
	"outcome": outcomeName,
	"oclass":  outcomeClass,
	"f1":      func(v float64) string { return fmt.Sprintf("%.1f", v) },
}
