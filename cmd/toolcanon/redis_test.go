package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolcanon/toolcanon/canonical/redisstore/redisconn"
)

// The usage names every connection flag: they come from one table, and a
// new one must be documented.
func TestUsageNamesEveryConnectionFlag(t *testing.T) {
	var b bytes.Buffer
	usage(&b)
	for _, f := range redisconn.Fields() {
		if !strings.Contains(b.String(), "--"+f.Flag) {
			t.Errorf("the usage does not name --%s", f.Flag)
		}
	}
}
