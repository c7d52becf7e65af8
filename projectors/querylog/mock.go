package querylog

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// Source runs a logical log query and returns the backend's raw response.
type Source interface {
	Search(ctx context.Context, req Request) ([]byte, error)
}

// MockEntry is one log entry held by a Mock.
type MockEntry struct {
	Topic     string
	Timestamp time.Time
	Level     string
	Service   string
	Message   string
	Instance  string             // never projected
	Metrics   map[string]float64 // never projected
}

// Mock is the seed's log source: it answers from entries held in memory
// with the legacy response (see the package documentation). It is meant
// for demos and tests.
type Mock struct {
	Entries []MockEntry
	// Fail, when set, makes every search answer success=false with this
	// error text.
	Fail string
	// Now is the end of every search window; nil means time.Now.
	Now func() time.Time
}

type legacyEntry struct {
	Timestamp string             `json:"timestamp"`
	Level     string             `json:"level"`
	Service   string             `json:"service"`
	Message   string             `json:"message"`
	Instance  string             `json:"instance,omitempty"`
	Metrics   map[string]float64 `json:"metrics,omitempty"`
}

type legacyResponse struct {
	Success bool          `json:"success"`
	Error   string        `json:"error,omitempty"`
	Source  string        `json:"source"`
	Topic   string        `json:"topic"`
	Query   string        `json:"query"`
	Window  legacyWindow  `json:"window"`
	Total   int           `json:"total"`
	Entries []legacyEntry `json:"entries"`
}

type legacyWindow struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Search returns the entries of req.Topic whose message contains req.Query
// (case-insensitively; "*" matches all) within the lookback window, in time
// order.
func (m *Mock) Search(ctx context.Context, req Request) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	to := now().UTC()
	lookback := req.LookbackMinutes
	if lookback == 0 {
		lookback = DefaultLookbackMinutes
	}
	from := to.Add(-time.Duration(lookback) * time.Minute)
	resp := legacyResponse{
		Success: m.Fail == "",
		Error:   m.Fail,
		Source:  "mock",
		Topic:   req.Topic,
		Query:   req.Query,
		Window:  legacyWindow{From: from.Format(time.RFC3339Nano), To: to.Format(time.RFC3339Nano)},
		Entries: []legacyEntry{},
	}
	if m.Fail == "" {
		q := strings.ToLower(req.Query)
		for _, e := range m.Entries {
			if e.Topic != req.Topic || e.Timestamp.Before(from) || e.Timestamp.After(to) {
				continue
			}
			if q != "*" && !strings.Contains(strings.ToLower(e.Message), q) {
				continue
			}
			resp.Entries = append(resp.Entries, legacyEntry{
				Timestamp: e.Timestamp.UTC().Format(time.RFC3339Nano), Level: e.Level, Service: e.Service,
				Message: e.Message, Instance: e.Instance, Metrics: e.Metrics,
			})
		}
		resp.Total = len(resp.Entries)
	}
	return json.Marshal(resp)
}
