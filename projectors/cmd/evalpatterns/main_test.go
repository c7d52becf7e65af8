package main

import "testing"

func TestGroupingAccuracy(t *testing.T) {
	truth := []string{"A", "A", "B", "B", "C"}
	for _, c := range []struct {
		mined []string
		want  float64
	}{
		{[]string{"x", "x", "y", "y", "z"}, 1},
		{[]string{"x", "x", "x", "x", "z"}, 0.2}, // A and B merged: only C is right
		{[]string{"x", "y", "z", "z", "w"}, 0.6}, // A split: B and C are right
	} {
		if got := GroupingAccuracy(c.mined, truth); got != c.want {
			t.Errorf("%v: %v, want %v", c.mined, got, c.want)
		}
	}
}
