// Package svgchart draws the benchmark report's charts as standalone SVG:
// grouped bar charts and line charts over named categories, with axes, tick
// labels, axis titles and a legend, on a linear or a logarithmic value axis.
// Every text is XML-escaped; characters XML cannot carry become U+FFFD.
package svgchart

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
)

// Series is one named row of values, one per category of its chart. A NaN,
// an infinite value, or (on a logarithmic axis) a value that is not
// positive is missing: nothing is drawn for it.
type Series struct {
	Name   string
	Values []float64
}

// Chart is what to draw: categories along the horizontal axis, the values
// of each series against the vertical one.
type Chart struct {
	Title      string
	XLabel     string // title of the category axis
	YLabel     string // title of the value axis
	Categories []string
	Series     []Series
	// LogY draws the value axis in powers of ten.
	LogY bool
	// Width and Height are the picture's size in pixels (default 760×420).
	Width, Height int
}

// Layout constants, in pixels.
const (
	defaultWidth  = 760
	defaultHeight = 420
	marginLeft    = 76
	marginTop     = 44
	marginBottom  = 64
	legendWidth   = 190
	fontSize      = 12
	maxTicks      = 20
)

// palette colours the series in order, then again.
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// color returns the colour of the i-th series.
func color(i int) string { return palette[i%len(palette)] }

// Frame is where a chart's plot area lies and how values map to it.
type Frame struct {
	X0, X1, Y0, Y1 float64 // plot area: X0 left, X1 right, Y0 top, Y1 bottom
	Lo, Hi         float64 // the value axis spans [Lo, Hi]
	Log            bool
	Ticks          []float64
	Categories     int
	empty          bool // no value of any series is drawn
}

// Y returns the vertical coordinate of value v.
func (f Frame) Y(v float64) float64 {
	lo, hi := f.Lo, f.Hi
	if f.Log {
		v, lo, hi = math.Log10(v), math.Log10(lo), math.Log10(hi)
	}
	return f.Y1 - (v-lo)/(hi-lo)*(f.Y1-f.Y0)
}

// Slot returns the left edge and width of category i's slot.
func (f Frame) Slot(i int) (left, width float64) {
	width = (f.X1 - f.X0) / float64(max(f.Categories, 1))
	return f.X0 + float64(i)*width, width
}

// present reports whether v is drawn on a frame of kind log.
func present(v float64, log bool) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && (!log || v > 0)
}

// Frame returns the plot area and value scale of c: from zero (or, on a
// logarithmic axis, the power of ten at or below the smallest value) to a
// round value at or above the largest.
func (c Chart) Frame() Frame {
	w, h := c.size()
	f := Frame{X0: marginLeft, X1: float64(w - legendWidth), Y0: marginTop, Y1: float64(h - marginBottom),
		Log: c.LogY, Categories: len(c.Categories)}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for i, v := range s.Values {
			if i < len(c.Categories) && present(v, c.LogY) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	f.empty = math.IsInf(lo, 1)
	if c.LogY {
		if math.IsInf(lo, 1) {
			lo, hi = 1, 10
		}
		f.Lo, f.Hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
		if f.Hi <= f.Lo {
			f.Hi = f.Lo * 10
		}
		for t := f.Lo; t <= f.Hi*1.0001 && len(f.Ticks) <= maxTicks; t *= 10 {
			f.Ticks = append(f.Ticks, t)
		}
		return f
	}
	if math.IsInf(hi, -1) || hi <= 0 {
		hi = 1
	}
	lo = math.Min(0, lo)
	if math.IsInf(lo, 1) {
		lo = 0
	}
	step := niceStep((hi - lo) / 5)
	f.Lo, f.Hi = math.Floor(lo/step)*step, math.Ceil(hi/step)*step
	if f.Hi <= f.Lo {
		f.Hi = f.Lo + step
	}
	for i := 0; i <= maxTicks; i++ { // bounded: a span too wide for floats has no round step
		t := f.Lo + float64(i)*step
		if t > f.Hi+step/1e6 {
			break
		}
		f.Ticks = append(f.Ticks, t)
	}
	return f
}

// niceStep returns 1, 2 or 5 times a power of ten, at or above x.
func niceStep(x float64) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// FormatValue writes a tick or value compactly: 1.5k, 12M, 0.25.
func FormatValue(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return strconv.FormatFloat(v/1e9, 'g', 3, 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func (c Chart) size() (int, int) {
	w, h := c.Width, c.Height
	if w <= 0 {
		w = defaultWidth
	}
	if h <= 0 {
		h = defaultHeight
	}
	return max(w, marginLeft+legendWidth+40), max(h, marginTop+marginBottom+40)
}

// Bar draws c as grouped bars: a group per category, a bar per series.
func (c Chart) Bar() []byte { return c.draw(true) }

// Line draws c as lines: a line per series, through a marker per category.
func (c Chart) Line() []byte { return c.draw(false) }

// svg accumulates the picture.
type svg struct{ bytes.Buffer }

func (b *svg) text(x, y float64, anchor, extra, s string) {
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s"%s>`, x, y, anchor, extra)
	_ = xml.EscapeText(b, []byte(s))
	b.WriteString("</text>\n")
}

func (b *svg) title(s string) {
	b.WriteString("<title>")
	_ = xml.EscapeText(b, []byte(s))
	b.WriteString("</title>")
}

func (c Chart) draw(bars bool) []byte {
	w, h := c.size()
	f := c.Frame()
	var b svg
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="%d">`+"\n",
		w, h, w, h, fontSize)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="white"/>`+"\n", w, h)
	b.text(float64(w)/2, 24, "middle", ` font-size="15" font-weight="bold"`, c.Title)

	// Value axis: grid lines and tick labels, then its title.
	for _, t := range f.Ticks {
		y := f.Y(t)
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", f.X0, y, f.X1, y)
		b.text(f.X0-6, y+4, "end", "", FormatValue(t))
	}
	yl := (f.Y0 + f.Y1) / 2
	b.text(16, yl, "middle", fmt.Sprintf(` transform="rotate(-90 16 %.1f)"`, yl), c.YLabel)
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", f.X0, f.Y0, f.X0, f.Y1)
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", f.X0, f.Y1, f.X1, f.Y1)

	// Category axis: a label under each slot, then its title.
	for i, name := range c.Categories {
		left, width := f.Slot(i)
		b.text(left+width/2, f.Y1+18, "middle", "", name)
	}
	b.text((f.X0+f.X1)/2, f.Y1+44, "middle", "", c.XLabel)

	if f.empty {
		b.text((f.X0+f.X1)/2, (f.Y0+f.Y1)/2, "middle", ` fill="#888"`, "no data")
	}
	base := f.Y(f.Lo)
	if !f.Log && f.Lo < 0 {
		base = f.Y(0)
	}
	for j, s := range c.Series {
		colour := color(j)
		if bars {
			for i := range c.Categories {
				if i >= len(s.Values) || !present(s.Values[i], f.Log) {
					continue
				}
				left, width := f.Slot(i)
				bw := width * 0.8 / float64(len(c.Series))
				x := left + width*0.1 + float64(j)*bw
				y := f.Y(s.Values[i])
				top, height := math.Min(y, base), math.Abs(base-y)
				fmt.Fprintf(&b, `<rect class="bar" x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s">`, x, top, bw, height, colour)
				b.title(fmt.Sprintf("%s, %s: %s", s.Name, c.Categories[i], FormatValue(s.Values[i])))
				b.WriteString("</rect>\n")
			}
			continue
		}
		var path bytes.Buffer
		move := true
		for i := range c.Categories {
			if i >= len(s.Values) || !present(s.Values[i], f.Log) {
				move = true
				continue
			}
			left, width := f.Slot(i)
			cmd := 'L'
			if move {
				cmd = 'M'
			}
			fmt.Fprintf(&path, "%c%.2f %.2f ", cmd, left+width/2, f.Y(s.Values[i]))
			move = false
		}
		if path.Len() > 0 {
			fmt.Fprintf(&b, `<path class="line" d="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", bytes.TrimSpace(path.Bytes()), colour)
		}
		for i := range c.Categories {
			if i >= len(s.Values) || !present(s.Values[i], f.Log) {
				continue
			}
			left, width := f.Slot(i)
			fmt.Fprintf(&b, `<circle class="point" cx="%.2f" cy="%.2f" r="3.5" fill="%s">`, left+width/2, f.Y(s.Values[i]), colour)
			b.title(fmt.Sprintf("%s, %s: %s", s.Name, c.Categories[i], FormatValue(s.Values[i])))
			b.WriteString("</circle>\n")
		}
	}

	// Legend: a swatch and the name of each series, at the right.
	lx := f.X1 + 16
	for j, s := range c.Series {
		y := f.Y0 + float64(j)*20
		fmt.Fprintf(&b, `<rect class="swatch" x="%.1f" y="%.1f" width="12" height="12" fill="%s"/>`+"\n", lx, y, color(j))
		b.text(lx+18, y+10, "start", "", s.Name)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}
