//go:build perfgate_slow

package loadgen

import "sync/atomic"

// perfgateSink keeps perfgateSlowdown's work from being optimized away.
var perfgateSink atomic.Uint64

// perfgateSlowdown burns a few microseconds of CPU per streamed chunk, so that a build with
// -tags perfgate_slow is slower by construction: the performance gate's own test
// (internal/perfgate) shows that the gate fails such a build. Without the tag it is the empty
// function of perfgate_fast.go.
func perfgateSlowdown() {
	x := uint64(1)
	for range 3000 {
		x = x*6364136223846793005 + 1442695040888963407
	}
	perfgateSink.Store(x)
}
