package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// addScaled must name every field of scalarAcc: a field added later and left out would be
// silently zero in every resample.
func TestScalarAccAddScaledCoversEveryField(t *testing.T) {
	typ := reflect.TypeFor[scalarAcc]()
	for i := range typ.NumField() {
		if typ.Field(i).Type.Kind() != reflect.Float64 {
			t.Fatalf("scalarAcc.%s is not a float64: this test reads the struct as an array", typ.Field(i).Name)
		}
	}
	const n = unsafe.Sizeof(scalarAcc{}) / 8
	var b scalarAcc
	bs := (*[n]float64)(unsafe.Pointer(&b))
	for i := range bs {
		bs[i] = float64(i + 1)
	}
	var a scalarAcc
	a.addScaled(&b, 2)
	as := (*[n]float64)(unsafe.Pointer(&a))
	for i := range as {
		if as[i] != 2*float64(i+1) {
			t.Errorf("scalarAcc.%s: %v after addScaled(b, 2), want %v", typ.Field(i).Name, as[i], 2*float64(i+1))
		}
	}
}

// cellRecords is a side of n requests with varied TTFT, gaps and chunk sizes, a few failed.
func cellRecords(rng *rand.Rand, n int) SliceSource {
	out := make(SliceSource, n)
	for i := range out {
		gaps := make([]float64, 3+rng.IntN(12))
		tokens := make([]int32, len(gaps)+1)
		for k := range gaps {
			gaps[k] = 5 + rng.ExpFloat64()*20
		}
		for k := range tokens {
			tokens[k] = int32(1 + rng.IntN(3))
		}
		r := timeline(fmt.Sprintf("r%04d", i), float64(i)*50, 20+rng.ExpFloat64()*200, gaps, tokens)
		r.Phase = PhaseSteady
		if rng.IntN(20) == 0 {
			r.Failure, r.Error, r.Status = FailHTTP5xx, "503", 503
		}
		out[i] = r
	}
	return out
}

// loadCells reads one side as Compare does: its records, block plan and cells.
func loadCells(t *testing.T, srcs []Source, opts *Options) (*sideData, *blockPlan, *sideCells) {
	t.Helper()
	d, err := loadSide(srcs, opts)
	if err != nil {
		t.Fatal(err)
	}
	p := planBlocks(d)
	g, err := cellsOf(d, &p)
	if err != nil {
		t.Fatal(err)
	}
	return d, &p, g
}

// A resample weighs each cell of records alike, so evaluating the cells with weights w must
// give what evaluating the resample itself gives: every record repeated w(its cell) times,
// each weighing 1. Quantiles are the same values exactly; means and ratios agree to rounding.
func TestCellWeightsEqualTheMaterializedResample(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	src := cellRecords(rng, 600)
	opts := Options{}.withDefaults()
	d, p, g := loadCells(t, []Source{src}, &opts)
	if p.blocks < 2 {
		t.Fatalf("%d blocks", p.blocks)
	}
	names := []string{"ttft.mean", "ttft.p50", "ttft.p90", "ttft.p95", "ttft.p99", "ttft.p999", "ttft.max", "e2e.p99", "tpot.mean",
		"itl.mean", "itl.p50", "itl.p99", "itl_chunk.p95", "tokens_per_chunk.mean", "tokens_per_chunk.p90",
		"failures.fraction", "throughput.output_tokens_per_s", "stalls.per_request", "goodput.fraction"}
	specs, err := compileMetrics(names, nil)
	if err != nil {
		t.Fatal(err)
	}
	for trial := range 20 {
		runs, blocks := []int32{1}, make([]int32, p.blocks)
		drawCounts(blocks, rng.IntN)
		w := make([]int32, g.cells)
		g.weigh(runs, blocks, w)
		got := g.eval(specs, w, d.window)

		var resample SliceSource
		for i, r := range src {
			for range w[d.recs[i].run*g.blocks+int(p.of[d.recs[i].unit])] {
				c := r
				c.ID = fmt.Sprintf("%s/%d", r.ID, len(resample))
				resample = append(resample, c)
			}
		}
		_, _, g2 := loadCells(t, []Source{resample}, &opts)
		want := g2.eval(specs, nil, d.window)
		for k, sp := range specs {
			a, b := got[k], want[k]
			ok := a == b || math.IsNaN(a) && math.IsNaN(b)
			if !ok && sp.info.Stat == "mean" || !ok && sp.family == "" {
				ok = math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
			}
			if !ok {
				t.Errorf("trial %d, %s: %v with cell weights, %v over the materialized resample", trial, sp.info.Name, a, b)
			}
		}
	}
}

// Unweighted, the cells give what the records give, computed here directly from each
// record's values and packed bins (an independent reading of the same rules).
// One run (10 cells: quantiles through the checkpoints) and two runs of independent requests
// (a block a request: more cells than checkpoints are kept for, a walk over every value).
func TestCellsUnweightedEqualTheRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	for _, runs := range [][]Source{{cellRecords(rng, 700)}, {cellRecords(rng, 500), cellRecords(rng, 300)}} {
		opts := Options{}.withDefaults()
		d, _, g := loadCells(t, runs, &opts)
		t.Logf("%d runs: %d cells", len(runs), g.cells)
		if len(runs) == 1 && g.chk[sfTTFT] == nil || len(runs) == 2 && g.chk[sfTTFT] != nil {
			t.Fatalf("%d runs, %d cells: checkpoints %v", len(runs), g.cells, g.chk[sfTTFT] != nil)
		}
		checkCellsAgainstRecords(t, d, g, runs)
	}
}

func checkCellsAgainstRecords(t *testing.T, d *sideData, g *sideCells, runs []Source) {
	t.Helper()
	quantiles := func(sorted []float64) []float64 {
		var out []float64
		ranks := ranksFor(float64(len(sorted)))
		for _, r := range ranks {
			k := max(0, int(math.Ceil(r))-1)
			out = append(out, sorted[min(k, len(sorted)-1)])
		}
		return append(out, sorted[len(sorted)-1])
	}
	for name, f := range scalarFamIdx {
		var vals []float64
		var sum float64
		for i := range d.recs {
			if v := d.recs[i].sc[f]; !math.IsNaN(v) {
				vals = append(vals, v)
				sum += v
			}
		}
		if len(vals) == 0 {
			continue
		}
		slices.Sort(vals)
		st := g.scalarStat(f, nil)
		got := []float64{st.p50, st.p90, st.p95, st.p99, st.p999, st.max}
		if want := quantiles(vals); !slices.Equal(got, want) {
			t.Errorf("%s quantiles %v, want %v", name, got, want)
		}
		if mean := sum / float64(len(vals)); math.Abs(st.mean-mean) > 1e-9*math.Abs(mean) {
			t.Errorf("%s mean %v, want %v", name, st.mean, mean)
		}
	}
	// Every binned value of the successful steady records, straight from their chunks.
	var binned [nBinFam][]float64
	var sums [nBinFam]float64
	bin := func(v int64) float64 { return binValue(uint32(min(int(binOf(v)), maxBin))) }
	for _, src := range runs {
		for _, r := range src.(SliceSource) {
			if r.Phase != PhaseSteady || !r.OK() {
				continue
			}
			for i, c := range r.Chunks {
				binned[bfTPC] = append(binned[bfTPC], bin(int64(c.Tokens)))
				sums[bfTPC] += float64(c.Tokens)
				if i > 0 {
					gap := c.T - r.Chunks[i-1].T
					for _, f := range []int{bfITL, bfChunk} {
						binned[f] = append(binned[f], bin(gap/1000))
						sums[f] += float64(gap) / 1e6
					}
				}
				for range c.Tokens - 1 {
					binned[bfITL] = append(binned[bfITL], bin(0))
				}
			}
			gaps, toks := refBursts(r.Chunks)
			for _, g := range gaps {
				binned[bfBurst] = append(binned[bfBurst], bin(g/1000))
				sums[bfBurst] += float64(g) / 1e6
			}
			for _, k := range toks {
				binned[bfTPB] = append(binned[bfTPB], bin(k))
				sums[bfTPB] += float64(k)
			}
		}
	}
	for name, f := range binFamIdx {
		vals, sum, cnt := binned[f], sums[f], int64(len(binned[f]))
		slices.Sort(vals)
		st := g.binStat(f, nil, make([]int64, maxBin+1), false, true)
		got := []float64{st.p50, st.p90, st.p95, st.p99, st.p999, st.max}
		if want := quantiles(vals); int64(len(vals)) != cnt || !slices.Equal(got, want) {
			t.Errorf("%s: %d values (counts %d), quantiles %v, want %v", name, len(vals), cnt, got, want)
		}
		if mean := sum / float64(cnt); math.Abs(st.mean-mean) > 1e-9*math.Abs(mean) {
			t.Errorf("%s mean %v, want %v", name, st.mean, mean)
		}
	}
	want := d.scalars()
	var got scalarAcc
	for c := range g.acc {
		got.addScaled(&g.acc[c], 1)
	}
	if math.Abs(got.okOut-want.okOut) > 1e-9*want.okOut || got.all != want.all || got.failed != want.failed || got.met != want.met {
		t.Errorf("scalar sums %+v, want %+v", got, *want)
	}
}

// changingSource yields one more record each time it is read.
type changingSource struct {
	recs  SliceSource
	reads int
}

func (s *changingSource) Each(fn func(*Record) error) error {
	s.reads++
	return s.recs[:min(len(s.recs), 50+s.reads)].Each(fn)
}

// Records that change between compare's readings (a file rewritten during the comparison)
// give an error that says so, never a wrong or a panicking comparison.
func TestCompareRefusesRecordsThatChangeBetweenReadings(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	recs := cellRecords(rng, 200)
	_, err := Compare([]Source{&changingSource{recs: recs}}, []Source{recs[:60]}, CompareOptions{Resamples: 20})
	if err == nil || !strings.Contains(err.Error(), "changed while they were compared") {
		t.Fatalf("err = %v", err)
	}
}

// Pairing is by request id, whatever order each side's records are in: every id matched
// (renumbered in place) or one dropped (restricted by copy), the candidate read backwards
// compares as it does read forwards.
func TestComparePairsByIDWhateverTheRecordOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	base := cellRecords(rng, 300)
	cand := cellRecords(rng, 300)
	for _, drop := range []bool{false, true} {
		c := cand
		if drop {
			c = cand[1:]
		}
		backwards := slices.Clone(c)
		slices.Reverse(backwards)
		opts := CompareOptions{Metrics: []string{"ttft.mean", "ttft.p90", "itl.p50", "e2e.p99"}, Resamples: 300}
		fwd, err := Compare([]Source{base}, []Source{c}, opts)
		if err != nil {
			t.Fatal(err)
		}
		bwd, err := Compare([]Source{base}, []Source{backwards}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !fwd.Paired || !bwd.Paired || fwd.MatchedIDs != len(c) || bwd.MatchedIDs != len(c) {
			t.Fatalf("drop=%v: paired %v/%v, matched %d/%d", drop, fwd.Paired, bwd.Paired, fwd.MatchedIDs, bwd.MatchedIDs)
		}
		for i, m := range fwd.Metrics {
			b := bwd.Metrics[i]
			for _, v := range [][2]float64{{m.Delta, b.Delta}, {m.CILow, b.CILow}, {m.CIHigh, b.CIHigh}} {
				if math.Abs(v[0]-v[1]) > 1e-9*math.Max(1, math.Abs(v[0])) {
					t.Errorf("drop=%v, %s: forwards delta %v [%v, %v], backwards %v [%v, %v]", drop, m.Name, m.Delta, m.CILow, m.CIHigh, b.Delta, b.CILow, b.CIHigh)
					break
				}
			}
		}
	}
}

// refBursts splits chunks into bursts the plain way: a new burst starts at every chunk more than
// BurstWindow after the one before (in whole µs, as the histograms record gaps). It returns the gaps before every burst but the first and
// every burst's token count.
func refBursts(chunks []Chunk) (gaps, tokens []int64) {
	for i, c := range chunks {
		if i == 0 || (c.T-chunks[i-1].T+500)/1000 > int64(BurstWindow/time.Microsecond) {
			if i > 0 {
				gaps = append(gaps, c.T-chunks[i-1].T)
			}
			tokens = append(tokens, 0)
		}
		tokens[len(tokens)-1] += chunkTokens(c)
	}
	return gaps, tokens
}
