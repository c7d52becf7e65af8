package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolcanon/toolcanon/otelcanon"
)

// gatewayTracing is the gateway's OpenTelemetry under --trace-file or
// --trace-stdout: every span exported as one JSON object per line.
type gatewayTracing struct {
	tp   *sdktrace.TracerProvider
	obs  *otelcanon.Observer
	prop *otelcanon.MetaPropagator
	file *os.File // nil for stdout
}

// newGatewayTracing exports to the file path (appended to, created 0600)
// or, when path is "", to stdout. dbSystem names the store in its spans.
func newGatewayTracing(path string, stdout io.Writer, dbSystem string) (*gatewayTracing, error) {
	t := &gatewayTracing{prop: otelcanon.NewMetaPropagator()}
	w := stdout
	if path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("cannot open the trace file: %w", err)
		}
		t.file, w = f, f
	}
	exp, err := stdouttrace.New(stdouttrace.WithWriter(w))
	if err != nil {
		t.closeFile()
		return nil, err
	}
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "toolcanon-gateway"))))
	if t.obs, err = otelcanon.New(t.tp, noop.NewMeterProvider(), otelcanon.WithDBSystem(dbSystem)); err != nil {
		_ = t.tp.Shutdown(context.Background())
		t.closeFile()
		return nil, err
	}
	return t, nil
}

// close exports the spans still buffered and closes the file.
func (t *gatewayTracing) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := t.tp.Shutdown(ctx)
	if t.file != nil {
		err = errors.Join(err, t.file.Close())
	}
	return err
}

func (t *gatewayTracing) closeFile() {
	if t.file != nil {
		_ = t.file.Close()
	}
}
