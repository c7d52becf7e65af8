package canonical_test

import (
	"fmt"

	"github.com/toolcanon/toolcanon/canonical"
)

// A worker joining a run may leave limits zero ("the run's"); a non-zero
// limit must be the run's.
func ExampleLimits_Conflict() {
	run := canonical.Limits{MaxCallsPerRun: 20, MaxCallsPerTool: 10}.WithDefaults()
	fmt.Printf("%q\n", canonical.Limits{}.Conflict(run))
	fmt.Printf("%q\n", canonical.Limits{MaxCallsPerRun: 20}.Conflict(run))
	fmt.Printf("%q\n", canonical.Limits{MaxCallsPerRun: 20, MaxCallsPerTool: 64}.Conflict(run))
	// Output:
	// ""
	// ""
	// "MaxCallsPerTool"
}
