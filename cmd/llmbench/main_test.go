package main

import (
	"runtime"
	"testing"

	"github.com/llmbench/llmbench/loadgen"
)

func TestSchedulingHeadroom(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)

	schedulingHeadroom(func(string) string { return "" })
	if got := runtime.GOMAXPROCS(0); got != 2*loadgen.CPUs {
		t.Errorf("GOMAXPROCS %d, want twice the %d CPUs", got, loadgen.CPUs)
	}
	runtime.GOMAXPROCS(before)
	schedulingHeadroom(func(k string) string {
		if k == "GOMAXPROCS" {
			return "1"
		}
		return ""
	})
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d with $GOMAXPROCS set, want it left at %d", got, before)
	}
}
