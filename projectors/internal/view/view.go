// Package view converts between byte slices and strings without copying,
// for the projectors' read-only lookups in raw responses (gjson paths, map
// keys, number parsing). A view aliases its source: it is only valid while
// the source is unchanged, and it must never be written to or kept past the
// call that made it. That is why the package is internal: nothing outside
// the projectors can hold a view of a caller's buffer.
package view

import "unsafe"

// String views b as a string without copying.
func String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Bytes views s as bytes without copying; the bytes must not be written.
func Bytes(s string) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
