package observe_test

import (
	"context"
	"log/slog"
	"os"

	"github.com/toolcanon/toolcanon/canonical/memstore"
	"github.com/toolcanon/toolcanon/observe"
)

// A Logger writes one line per call and, at Debug, one per store operation;
// here a store operation, with the time left out so the output is stable.
func ExampleLogger() {
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" {
				return slog.Attr{}
			}
			return a
		},
	})
	store := observe.Store(memstore.New(), observe.NewLogger(slog.New(h)))
	_ = store.CloseRun(context.Background(), "run-42", "")
	_, _ = store.Get(context.Background(), "run-42", "call_1")
	// Output:
	// level=DEBUG msg="store op" method=CloseRun script=close_run command=EVALSHA run_id=run-42 tool_call_id="" items=0 code=NOT_FOUND
	// level=DEBUG msg="store op" method=Get script="" command=HMGET run_id=run-42 tool_call_id=call_1 items=1 code=NOT_FOUND
}
