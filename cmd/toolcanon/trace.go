package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolcanon/toolcanon/otelcanon"
)

// tracing is the demo's OpenTelemetry: an SDK that keeps every span in
// memory, so that the run's span tree can be printed at the end.
type tracing struct {
	spans *tracetest.SpanRecorder
	tp    *sdktrace.TracerProvider
	mp    *sdkmetric.MeterProvider
	obs   *otelcanon.Observer
}

func newTracing(dbSystem string) (*tracing, error) {
	t := &tracing{spans: tracetest.NewSpanRecorder()}
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(t.spans))
	t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	obs, err := otelcanon.New(t.tp, t.mp, otelcanon.WithDBSystem(dbSystem))
	if err != nil {
		return nil, err
	}
	t.obs = obs
	return t, nil
}

func (t *tracing) close() {
	_ = t.tp.Shutdown(context.Background())
	_ = t.mp.Shutdown(context.Background())
}

// write prints the span tree: each root in the order it started, its
// children indented under it, with durations and codes.
func (t *tracing) write(w io.Writer) error {
	return writeTree(w, t.spans.Ended())
}

// writeTree prints spans as indented trees. A span whose parent is not among
// spans is a root.
func writeTree(w io.Writer, spans []sdktrace.ReadOnlySpan) error {
	byID := make(map[trace.SpanID]bool, len(spans))
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = true
	}
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	var roots []sdktrace.ReadOnlySpan
	calls := 0
	for _, s := range spans {
		if p := s.Parent(); p.IsValid() && byID[p.SpanID()] {
			children[p.SpanID()] = append(children[p.SpanID()], s)
			continue
		}
		roots = append(roots, s)
		if strings.HasPrefix(s.Name(), otelcanon.OperationExecuteTool) {
			calls++
		}
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		fmt.Fprintf(tw, "%s%s\t%s\t%s\n", strings.Repeat("  ", depth), s.Name(), duration(s.EndTime().Sub(s.StartTime())), label(s))
		kids := children[s.SpanContext().SpanID()]
		byStart(kids)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	byStart(roots)
	for _, r := range roots {
		walk(r, 1)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ntrace: %d spans, %d calls (execute_tool spans); wall-clock durations\n", len(spans), calls)
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line = strings.TrimRight(line, " \n"); line != "" {
			if _, err := fmt.Fprintln(w, line); err != nil {
				return err
			}
		}
	}
	return nil
}

func byStart(spans []sdktrace.ReadOnlySpan) {
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].StartTime().Before(spans[j].StartTime()) })
}

// label is what a span's line says after its duration: for a call its id
// and outcome, for any other span its code or evidence.
func label(s sdktrace.ReadOnlySpan) string {
	a := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		a[kv.Key] = kv.Value.Emit()
	}
	var parts []string
	if id := a[otelcanon.GenAIToolCallIDKey]; id != "" {
		parts = append(parts, id)
	}
	if st := a[otelcanon.StatusKey]; st != "" {
		parts = append(parts, st)
	}
	switch {
	case a["error.type"] != "":
		parts = append(parts, a["error.type"])
	case a[otelcanon.EvidenceKey] != "":
		parts = append(parts, a[otelcanon.EvidenceKey])
	}
	if a[otelcanon.ReplayedKey] == "true" {
		parts = append(parts, "replayed")
	}
	return strings.Join(parts, " ")
}

// duration prints d with three significant digits, in µs, ms or s.
func duration(d time.Duration) string {
	v, unit := float64(d)/float64(time.Microsecond), "µs"
	if v >= 999.5 {
		v, unit = v/1000, "ms"
	}
	if v >= 999.5 && unit == "ms" {
		v, unit = v/1000, "s"
	}
	decimals := 0
	switch {
	case v < 9.995:
		decimals = 2
	case v < 99.95:
		decimals = 1
	}
	return strconv.FormatFloat(v, 'f', decimals, 64) + unit
}
