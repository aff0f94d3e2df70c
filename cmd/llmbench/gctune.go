package main

import (
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync/atomic"
)

// simulate's collector (simulateTuning). At GOGC=400 the heap may grow to five times what is
// live before the next collection: cheap while the live heap is the ≈ 25 MB of a simulation
// that keeps up, but when the engine falls far behind its trace every waiting request is live
// (≈ 200 bytes each, issue 35), and 232 MB live for a million requests at ten times the
// engine's capacity let the heap reach 1.16 GB (1.23 GB RSS). A fixed memory limit
// (GOMEMLIMIT) would bound that, but a live heap beyond the limit (a session trace held whole)
// would then collect without pause. So the percentage follows the live heap instead: 400 while
// it is below a quarter of gcHeadroom, then as much as lets the heap grow by gcHeadroom before
// the next collection, and never below Go's default of 100.

// gcHeadroom is how much the heap may grow past its live part before a collection once the
// live heap is large.
const gcHeadroom = 384 << 20

// gcPercentFor is the GOGC for a live heap of live bytes with the given headroom.
func gcPercentFor(live, headroom uint64) int {
	if live == 0 {
		return 400
	}
	return int(min(400, max(100, 100*headroom/live)))
}

// gcSentinel is an object dropped at once whose cleanup runs after the next collection.
type gcSentinel struct{ _ *int }

// governGC sets GOGC after every collection from the live heap it left (runtime/metrics
// /gc/heap/live:bytes), changing it only when it moves; after, when set, is called with each
// percentage set. The returned function stops it.
func governGC(headroom uint64, after func(percent int)) (stop func()) {
	var stopped atomic.Bool
	sample := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	current := -1
	var arm func()
	arm = func() {
		runtime.AddCleanup(new(gcSentinel), func(struct{}) {
			if stopped.Load() {
				return
			}
			rtmetrics.Read(sample)
			if sample[0].Value.Kind() == rtmetrics.KindUint64 {
				if p := gcPercentFor(sample[0].Value.Uint64(), headroom); p != current {
					debug.SetGCPercent(p)
					current = p
					if after != nil {
						after(p)
					}
				}
			}
			arm()
		}, struct{}{})
	}
	arm()
	return func() { stopped.Store(true) }
}
