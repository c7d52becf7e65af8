//go:build !unix

package memstore_test

import "time"

// processCPU cannot read the process's CPU time here: 0.
func processCPU() time.Duration { return 0 }
