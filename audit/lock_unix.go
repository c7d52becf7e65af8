//go:build unix

package audit

import (
	"fmt"
	"os"
	"syscall"
)

// lockFile opens path and takes an exclusive lock on it, or fails at once
// when another process holds it.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: %s is held by another exporter: %w", path, err)
	}
	return f, nil
}
