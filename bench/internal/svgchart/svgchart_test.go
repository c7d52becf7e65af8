package svgchart_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/bench/internal/svgchart"
)

// element is one element of a drawn chart, with its attributes and text.
type element struct {
	name  string
	attrs map[string]string
	text  string
}

func (e element) num(t *testing.T, attr string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attrs[attr], 64)
	if err != nil {
		t.Fatalf("%s %s=%q: %v", e.name, attr, e.attrs[attr], err)
	}
	return v
}

// parse decodes b as XML to its end, failing the test on any error, and
// returns its elements in document order.
func parse(t testing.TB, b []byte) []element {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var out []element
	var open []int
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, b)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			e := element{name: x.Name.Local, attrs: map[string]string{}}
			for _, a := range x.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out = append(out, e)
			open = append(open, len(out)-1)
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) > 0 {
				out[open[len(open)-1]].text += string(x)
			}
		}
	}
	if len(out) == 0 || out[0].name != "svg" || out[0].attrs["xmlns"] != "http://www.w3.org/2000/svg" {
		t.Fatalf("root is not an svg element:\n%s", b)
	}
	return out
}

func find(es []element, name, class string) []element {
	var out []element
	for _, e := range es {
		if e.name == name && (class == "" || e.attrs["class"] == class) {
			out = append(out, e)
		}
	}
	return out
}

func texts(es []element) []string {
	var out []string
	for _, e := range find(es, "text", "") {
		out = append(out, e.text)
	}
	return out
}

func TestBarHeightsProportional(t *testing.T) {
	c := svgchart.Chart{Title: "t", XLabel: "x", YLabel: "y", Categories: []string{"a", "b", "c"},
		Series: []svgchart.Series{{Name: "s1", Values: []float64{10, 20, 40}}, {Name: "s2", Values: []float64{5, math.NaN(), 35}}}}
	es := parse(t, c.Bar())
	bars := find(es, "rect", "bar")
	if len(bars) != 5 { // the NaN has no bar
		t.Fatalf("%d bars, want 5", len(bars))
	}
	f := c.Frame()
	if f.Lo != 0 || f.Hi < 40 {
		t.Fatalf("value axis [%v, %v]", f.Lo, f.Hi)
	}
	for i, want := range []float64{10, 20, 40, 5, 35} {
		b := bars[i]
		h, y := b.num(t, "height"), b.num(t, "y")
		wantH := want / (f.Hi - f.Lo) * (f.Y1 - f.Y0)
		if math.Abs(h-wantH) > 0.01 || math.Abs(y+h-f.Y1) > 0.01 || math.Abs(y-f.Y(want)) > 0.01 {
			t.Errorf("bar %d (%v): y=%v height=%v, want height %v on the axis at %v", i, want, y, h, wantH, f.Y1)
		}
	}
	// Bars of one category sit side by side within its slot, in series order.
	left, width := f.Slot(2)
	x1, x2 := bars[2].num(t, "x"), bars[4].num(t, "x")
	if !(left <= x1 && x1 < x2 && x2+bars[4].num(t, "width") <= left+width) {
		t.Errorf("category 2's bars at %v and %v, slot [%v, %v]", x1, x2, left, left+width)
	}
	if bars[0].attrs["fill"] == bars[3].attrs["fill"] {
		t.Error("two series share a colour")
	}
	got := strings.Join(texts(es), "|")
	for _, s := range []string{"t", "x", "y", "a", "b", "c", "s1", "s2", "0", "40"} {
		if !strings.Contains("|"+got+"|", "|"+s+"|") {
			t.Errorf("no text %q in %q", s, got)
		}
	}
	if strings.Contains(got, "no data") {
		t.Errorf("a chart with values says it has none: %q", got)
	}
	if n := len(find(es, "rect", "swatch")); n != 2 {
		t.Errorf("%d legend swatches, want 2", n)
	}
}

func TestLogAxis(t *testing.T) {
	c := svgchart.Chart{Categories: []string{"1", "2", "3", "4"}, LogY: true,
		Series: []svgchart.Series{{Name: "s", Values: []float64{15, 150, 1500, 0}}}}
	f := c.Frame()
	if f.Lo != 10 || f.Hi != 10000 || len(f.Ticks) != 4 {
		t.Fatalf("log axis [%v, %v] ticks %v", f.Lo, f.Hi, f.Ticks)
	}
	es := parse(t, c.Line())
	pts := find(es, "circle", "point")
	if len(pts) != 3 { // 0 cannot be drawn on a log axis
		t.Fatalf("%d points, want 3", len(pts))
	}
	// Each value is ten times the one before: equal steps upwards.
	d1 := pts[0].num(t, "cy") - pts[1].num(t, "cy")
	d2 := pts[1].num(t, "cy") - pts[2].num(t, "cy")
	if d1 <= 0 || math.Abs(d1-d2) > 0.02 {
		t.Errorf("steps %v and %v", d1, d2)
	}
	if x0, x1 := pts[0].num(t, "cx"), pts[1].num(t, "cx"); x1 <= x0 {
		t.Errorf("points not left to right: %v, %v", x0, x1)
	}
	lines := find(es, "path", "line")
	if len(lines) != 1 || strings.Count(lines[0].attrs["d"], "M") != 1 || strings.Count(lines[0].attrs["d"], "L") != 2 {
		t.Fatalf("line paths: %+v", lines)
	}
}

func TestLineBreaksAtMissingValues(t *testing.T) {
	c := svgchart.Chart{Categories: []string{"a", "b", "c", "d"},
		Series: []svgchart.Series{{Name: "s", Values: []float64{1, math.NaN(), 3, 4}}}}
	lines := find(parse(t, c.Line()), "path", "line")
	if len(lines) != 1 || strings.Count(lines[0].attrs["d"], "M") != 2 {
		t.Fatalf("a line through a gap: %+v", lines)
	}
}

func TestEscapesText(t *testing.T) {
	evil := `</text><script>alert("x")</script> & 'q' ` + "\x01\xff"
	c := svgchart.Chart{Title: evil, XLabel: evil, YLabel: evil, Categories: []string{evil},
		Series: []svgchart.Series{{Name: evil, Values: []float64{1}}}}
	for _, b := range [][]byte{c.Bar(), c.Line()} {
		es := parse(t, b)
		if n := len(find(es, "script", "")); n != 0 {
			t.Fatalf("text became %d elements", n)
		}
		want := `</text><script>alert("x")</script> & 'q' ` + "\uFFFD\uFFFD"
		found := 0
		for _, s := range texts(es) {
			if s == want {
				found++
			}
		}
		if found != 5 { // title, both axis titles, the category, the legend
			t.Errorf("%d texts read back as the label, want 5", found)
		}
	}
}

func TestEmptyChart(t *testing.T) {
	for _, c := range []svgchart.Chart{{}, {Categories: []string{"a"}, Series: []svgchart.Series{{Name: "s", Values: []float64{math.NaN()}}}}} {
		es := parse(t, c.Bar())
		if !strings.Contains(strings.Join(texts(es), "|"), "no data") {
			t.Errorf("empty chart does not say so: %v", texts(es))
		}
		parse(t, c.Line())
	}
}

func TestNegativeValues(t *testing.T) {
	c := svgchart.Chart{Categories: []string{"a", "b"}, Series: []svgchart.Series{{Name: "s", Values: []float64{-10, 30}}}}
	f := c.Frame()
	if f.Lo > -10 || f.Hi < 30 {
		t.Fatalf("axis [%v, %v]", f.Lo, f.Hi)
	}
	bars := find(parse(t, c.Bar()), "rect", "bar")
	zero := f.Y(0)
	if math.Abs(bars[0].num(t, "y")-zero) > 0.01 || math.Abs(bars[1].num(t, "y")+bars[1].num(t, "height")-zero) > 0.01 {
		t.Errorf("bars do not start at zero (%v): %+v", zero, bars)
	}
}

func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.25: "0.25", 950: "950", 1500: "1.5k", 12e6: "12M", 3e9: "3G"} {
		if got := svgchart.FormatValue(v); got != want {
			t.Errorf("FormatValue(%v) = %q, want %q", v, got, want)
		}
	}
}

// FuzzChart draws charts of arbitrary labels and values: the output is
// always well-formed XML.
func FuzzChart(f *testing.F) {
	f.Add("title", "cat", "series", 1.5, -2.0, true)
	f.Add("<&>\"'", "\x00\xff", "]]>", math.Inf(1), math.NaN(), false)
	f.Add("wide", "a", "b", 1e308, -1e308, false)
	f.Add("wide", "a", "b", 1e308, 1e-308, true)
	f.Fuzz(func(t *testing.T, title, category, series string, v1, v2 float64, log bool) {
		c := svgchart.Chart{Title: title, XLabel: category, YLabel: series, Categories: []string{category, category + "2"},
			Series: []svgchart.Series{{Name: series, Values: []float64{v1, v2}}, {Name: title, Values: []float64{v2}}}, LogY: log}
		parse(t, c.Bar())
		parse(t, c.Line())
	})
}
