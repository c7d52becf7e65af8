package observe

import (
	"context"
	"log/slog"

	"github.com/toolcanon/toolcanon/canonical"
)

// Logger writes calls and store operations to a log/slog Logger: one line
// per call when it ends (level Info when READY, Warn when ERROR) and one
// Debug line per store operation. A line holds ids, tool, code, status,
// evidence, byte sizes and durations, and nothing of the payloads.
//
// It is an Observer and a StoreObserver, safe for concurrent use.
type Logger struct {
	l *slog.Logger
}

var (
	_ Observer      = (*Logger)(nil)
	_ StoreObserver = (*Logger)(nil)
)

// NewLogger returns a Logger writing to l (slog.Default() when nil).
func NewLogger(l *slog.Logger) *Logger {
	if l == nil {
		l = slog.Default()
	}
	return &Logger{l: l}
}

// Start implements Observer; it keeps ctx.
func (g *Logger) Start(ctx context.Context, _ Call) context.Context { return ctx }

// Phase implements Observer; phases are written with the call's line.
func (g *Logger) Phase(context.Context, Call, PhaseEvent) {}

// End implements Observer: the call's one line.
func (g *Logger) End(ctx context.Context, c Call, o Outcome) {
	level := slog.LevelInfo
	if o.Status != canonical.StatusReady {
		level = slog.LevelWarn
	}
	if !g.l.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs,
		slog.String("run_id", c.RunID),
		slog.String("tool_call_id", c.ToolCallID),
		slog.String("tool", c.Tool),
		slog.String("definition", definition(c)),
		slog.String("status", string(o.Status)),
	)
	if o.Code != "" {
		attrs = append(attrs, slog.String("code", string(o.Code)))
	}
	attrs = append(attrs,
		slog.String("evidence", string(o.Evidence)),
		slog.Bool("executed", o.Executed),
		slog.Bool("replayed", o.Replayed),
		slog.Duration("duration", o.Duration),
		slog.Group("phases",
			slog.Duration(Preflight.String(), o.Phases[Preflight-1]),
			slog.Duration(Begin.String(), o.Phases[Begin-1]),
			slog.Duration(Tool.String(), o.Phases[Tool-1]),
			slog.Duration(Projection.String(), o.Phases[Projection-1]),
			slog.Duration(Complete.String(), o.Phases[Complete-1])),
		slog.Group("bytes",
			slog.Int("input", o.InputBytes),
			slog.Int("request", o.RequestBytes),
			slog.Int("raw", o.RawBytes),
			slog.Int("result", o.ResultBytes),
			slog.Int("agent", o.AgentBytes)),
	)
	g.l.LogAttrs(ctx, level, "tool call", attrs...)
}

// StoreOp implements StoreObserver: one Debug line per operation.
func (g *Logger) StoreOp(ctx context.Context, op StoreOp) {
	if !g.l.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", op.Method),
		slog.String("script", op.Script),
		slog.String("command", op.Command),
		slog.String("run_id", op.RunID),
		slog.String("tool_call_id", op.ToolCallID),
		slog.Int("items", op.Items),
		slog.Duration("duration", op.Duration),
	}
	if op.Code != "" {
		attrs = append(attrs, slog.String("code", string(op.Code)))
	}
	g.l.LogAttrs(ctx, slog.LevelDebug, "store op", attrs...)
}

// definition is "name@version" of the bound definition, or "".
func definition(c Call) string {
	if c.Name == "" {
		return ""
	}
	return c.Name + "@" + c.Version
}
