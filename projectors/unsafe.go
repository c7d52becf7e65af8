package projectors

import "unsafe"

// bytesToString views b as a string without copying. Callers only read the
// string while b is unchanged.
func bytesToString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// BytesView returns b viewed as a string without copying, for read-only
// lookups (gjson, map keys) while b is unchanged. Raw responses are never
// written to during a projection, which is what makes this safe.
func BytesView(b []byte) string { return bytesToString(b) }

// stringBytes views s as bytes without copying; the bytes must not be
// written.
func stringBytes(s string) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// StringBytesView returns s viewed as bytes without copying, for passing
// sub-strings of a raw response back to byte-oriented writers. The bytes
// must not be written.
func StringBytesView(s string) []byte { return stringBytes(s) }
