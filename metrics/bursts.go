package metrics

// Bursts in Summarize at no measurable cost per chunk (issue 32 asks for none on ingest):
//
//   - ITL per burst is ITL per chunk without the gaps inside bursts. A gap between bursts is a
//     chunk gap above the window, so the burst histogram is the chunk histogram's part above
//     the window, copied once per group (settleBursts) instead of recorded per chunk. Gaps
//     are compared with the window in whole microseconds (burstGap), the histograms' unit, so
//     that the split is exact: at this geometry every value below 2,048 µs has its own bucket.
//   - Tokens per burst are small counts: a group tallies bursts of fewer than tpbSmall tokens
//     in an array and moves the tally into the histogram once (settleBursts).
//
// Measured (bench_test.go, on a shared 2-core machine, before bursts existed and after): the
// CPU time of BenchmarkSummarize at -benchtime 20x, six alternating runs each, 3.25 ± 0.38 s
// before and 3.13 ± 0.31 s after; BenchmarkSummarizePerRecord, twelve alternating runs each,
// median 20.0 µs before and 19.6 µs after (wall time at a load average of 13-19; Mann-Whitney
// P(before < after) 0.44). Recording both histograms per chunk instead had cost 13-39% in
// three alternating runs of BenchmarkSummarizePerRecord.

// burstWindowUs is BurstWindow in the histograms' unit.
const burstWindowUs = int64(BurstWindow / 1000)

// tpbSmall bounds the burst sizes a group tallies in an array; larger bursts go straight to
// the histogram.
const tpbSmall = 64

// burstGap reports whether a chunk gap (ns) separates two bursts: longer than BurstWindow once
// rounded to whole microseconds, as the histograms record it.
func burstGap(gapNs int64) bool { return nsToMicros(gapNs) > burstWindowUs }

// noteBurst counts one burst of n tokens.
func (g *group) noteBurst(n int64) {
	if n < tpbSmall {
		g.tpb[n]++
		return
	}
	g.h[hTPB].recordValue(n)
}

// settleBursts fills the group's burst histograms: tokens per burst from its tally, ITL per
// burst from the part of ITL per chunk above the window. It runs once per group; a second call
// does nothing.
func (g *group) settleBursts() {
	if g.burstsSettled {
		return
	}
	g.burstsSettled = true
	for n, c := range g.tpb {
		g.h[hTPB].recordValues(int64(n), c)
		g.tpb[n] = 0
	}
	splitBursts(g.h[hITLChunk], g.h[hITLBurst])
}

// splitBursts adds the values of chunk (µs) above the burst window to burst.
func splitBursts(chunk, burst *hist) {
	if chunk.count() == 0 {
		return
	}
	for _, b := range chunk.h.Distribution() {
		if b.Count > 0 && b.From > burstWindowUs {
			burst.recordValues(b.From, b.Count)
		}
	}
}
