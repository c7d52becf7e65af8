//go:build !unix

package redistest

import (
	"errors"
	"time"
)

// lockFile is not available here: the harness builds Valkey only on Unix.
func lockFile(path string, wait time.Duration) (func(), error) {
	return nil, errors.New("building Valkey needs a Unix system: set " + EnvValkeyServer + " to a valkey-server binary")
}
