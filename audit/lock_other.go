//go:build !unix

package audit

import "os"

// lockFile opens path; without flock, one exporter per directory is the
// operator's to ensure.
func lockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o640)
}
