package bench_test

import (
	"context"
	"fmt"

	"github.com/toolcanon/toolcanon/bench"
)

// Two hundred invocations begin the same tool call at once on toolcanon's
// in-process store: exactly one is told it may run the tool.
func ExampleDuplicates() {
	impl := bench.NewMemStore("memstore", bench.DefaultConfig("example"))
	defer impl.Close()
	p := bench.DefaultPayload()
	d, err := bench.Duplicates(context.Background(), impl, bench.NewCalls("ex"), p.Request, 200)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d of %d executed, %d duplicates\n", d.Executed, d.Beginners, d.Duplicates())
	// Output: 1 of 200 executed, 0 duplicates
}
