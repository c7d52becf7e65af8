package ui_test

import (
	"io"
	"log/slog"
	"strings"
	"sync"
)

// lockedWriter lets the handler's log be read while requests write it.
type lockedWriter struct {
	b  *strings.Builder
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func newLog(b *strings.Builder, mu *sync.Mutex) *slog.Logger {
	var w io.Writer = lockedWriter{b, mu}
	return slog.New(slog.NewTextHandler(w, nil))
}
