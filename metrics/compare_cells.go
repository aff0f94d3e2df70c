package metrics

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// sideCells holds one side's records merged by resampling cell — (run, time block), the unit
// the two-level bootstrap draws (variance.go). A resample gives every record of a cell the same
// weight, so per-cell sums, per-cell merged bins and the cell of each sorted value give exactly
// the statistics the records would, and a resample costs the cells (plus one pass over each
// needed family's sorted values) instead of every record's bins: `llmbench compare` of two
// 100,000-request runs spent 183 s of CPU in its 2,000 resamples walking every record's ITL
// bins and its scalar values in random order.
type sideCells struct {
	blocks int // cell c is run c/blocks, block c%blocks
	cells  int
	acc    []scalarAcc // per cell, every record weighing 1

	// Scalar families: the defined values in increasing order with each one's cell, and the
	// count and sum per cell.
	vals   [nScalarFam][]float64
	cellOf [nScalarFam][]int32
	scnt   [nScalarFam][]float64
	ssum   [nScalarFam][]float64
	// chk[f][j*cells+c] counts cell c's values among vals[f][:j*chkStride], when there are
	// at most maxChkCells cells: a quantile is then found by bisecting the checkpoints and
	// walking at most chkStride values, not every value below it.
	chk [nScalarFam][]int32

	// Binned families: count and exact sum per cell, and each cell's bins merged.
	bcnt [nBinFam][]int64
	bsum [nBinFam][]float64
	bins [nBinFam]cellBins
}

// cellBins stores each cell's merged bins: cell c owns [start[c], start[c+1]).
type cellBins struct {
	start []int32
	bin   []uint16
	cnt   []int64
}

const (
	chkStride   = 64
	maxChkCells = 64 // memory: 4 bytes × cells per chkStride values (≤ 4 bytes a value)
)

// cellsOf merges d's records by cell under plan p, reading the records again for their bins.
func cellsOf(d *sideData, p *blockPlan) (*sideCells, error) {
	g := &sideCells{blocks: max(1, p.blocks)}
	g.cells = max(1, d.runs) * g.blocks
	g.acc = make([]scalarAcc, g.cells)
	cell := make([]int32, len(d.recs))
	for i := range d.recs {
		r := &d.recs[i]
		c := int32(r.run*g.blocks + int(p.of[r.unit]))
		cell[i] = c
		g.acc[c].add(r, 1)
	}
	for f := range g.vals {
		g.scnt[f], g.ssum[f] = make([]float64, g.cells), make([]float64, g.cells)
		var idx []int32
		for i := range d.recs {
			if v := d.recs[i].sc[f]; !math.IsNaN(v) {
				idx = append(idx, int32(i))
				g.scnt[f][cell[i]]++
				g.ssum[f][cell[i]] += v
			}
		}
		slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(d.recs[a].sc[f], d.recs[b].sc[f]) })
		g.vals[f], g.cellOf[f] = make([]float64, len(idx)), make([]int32, len(idx))
		for k, i := range idx {
			g.vals[f][k], g.cellOf[f][k] = d.recs[i].sc[f], cell[i]
		}
		if g.cells <= maxChkCells {
			n := len(idx)/chkStride + 1
			chk := make([]int32, n*g.cells)
			run := make([]int32, g.cells)
			for k, c := range g.cellOf[f] {
				if k%chkStride == 0 {
					copy(chk[k/chkStride*g.cells:], run)
				}
				run[c]++
			}
			if len(idx)%chkStride == 0 {
				copy(chk[len(idx)/chkStride*g.cells:], run)
			}
			g.chk[f] = chk
		}
	}
	for f := range g.bins {
		g.bcnt[f], g.bsum[f] = make([]int64, g.cells), make([]float64, g.cells)
		for i := range d.recs {
			g.bcnt[f][cell[i]] += d.recs[i].cnt[f]
			g.bsum[f][cell[i]] += d.recs[i].sums[f]
		}
	}
	if err := g.readBins(d, cell); err != nil {
		return nil, err
	}
	return g, nil
}

// maxDenseCells bounds the cells whose bins are merged in dense arrays (3 families × 3,287
// bins × 8 bytes, 79 KB a cell); more cells (short blocks over several runs: a record or a
// few each) are merged in sparse histograms.
const maxDenseCells = 512

// readBins reads d's records again and merges each one's bins into its cell.
func (g *sideCells) readBins(d *sideData, cell []int32) error {
	at := make([][]int32, len(d.srcs)) // cell of each steady record of each run; -1: not compared
	for run := range at {
		at[run] = make([]int32, d.steady[run])
		for k := range at[run] {
			at[run][k] = -1
		}
	}
	for i := range d.recs {
		at[d.recs[i].run][d.recs[i].pos] = cell[i]
	}
	width := maxBin + 1
	var dense []int64
	var sparse [nBinFam][]sparseHist
	if g.cells <= maxDenseCells {
		dense = make([]int64, nBinFam*g.cells*width)
	} else {
		for f := range sparse {
			sparse[f] = make([]sparseHist, g.cells)
		}
	}
	for run, src := range d.srcs {
		k := 0
		err := src.Each(func(r *Record) error {
			if r.Phase != PhaseSteady {
				return nil
			}
			if k >= len(at[run]) {
				return fmt.Errorf("the records changed while they were compared: more steady-state records than the first reading's %d", len(at[run]))
			}
			c := at[run][k]
			k++
			if c < 0 {
				return nil
			}
			eachChunkValue(r, func(f int, v, n int64, _ float64) {
				if dense != nil {
					dense[(f*g.cells+int(c))*width+min(int(binOf(v)), maxBin)] += n
				} else {
					sparse[f][c] = sparse[f][c].add(v, n)
				}
			})
			return nil
		})
		if err != nil && !errors.Is(err, ErrTruncated) {
			return fmt.Errorf("run %d: %w", run+1, err)
		}
		if k != len(at[run]) {
			return fmt.Errorf("run %d: the records changed while they were compared: %d steady-state records, %d at the first reading", run+1, k, len(at[run]))
		}
	}
	for f := range g.bins {
		dst := &g.bins[f]
		for c := range g.cells {
			dst.start = append(dst.start, int32(len(dst.bin)))
			if dense != nil {
				row := dense[(f*g.cells+c)*width : (f*g.cells+c+1)*width]
				for b, n := range row {
					if n != 0 {
						dst.bin = append(dst.bin, uint16(b))
						dst.cnt = append(dst.cnt, n)
					}
				}
				continue
			}
			for _, bc := range sparse[f][c] {
				dst.bin = append(dst.bin, uint16(min(int(bc.bin), maxBin)))
				dst.cnt = append(dst.cnt, bc.count)
			}
			sparse[f][c] = nil
		}
		dst.start = append(dst.start, int32(len(dst.bin)))
	}
	return nil
}

// weigh sets w[c] = runs[run of c] × blocks[block of c].
func (g *sideCells) weigh(runs, blocks, w []int32) {
	for c := range w {
		w[c] = runs[c/g.blocks] * blocks[c%g.blocks]
	}
}

// eval computes every metric with per-cell weights w (nil: all 1) over window seconds.
func (g *sideCells) eval(specs []metricSpec, w []int32, window float64) []float64 {
	out := make([]float64, len(specs))
	var acc *scalarAcc
	var famStats [nScalarFam]*famStat
	var binStats [nBinFam]*famStat
	var dense []int64
	var needQ [nBinFam]bool
	for _, sp := range specs {
		if sp.info.Storage == StorageBins && sp.stat != "mean" {
			needQ[binFamIdx[sp.family]] = true
		}
	}
	for k, sp := range specs {
		if sp.family == "" {
			if acc == nil {
				acc = &scalarAcc{}
				for c := range g.acc {
					if x := g.weight(w, c); x != 0 {
						acc.addScaled(&g.acc[c], x)
					}
				}
			}
			out[k] = acc.metric(sp.scalar, window)
			continue
		}
		var st *famStat
		if sp.info.Storage == StorageHistogram {
			f := scalarFamIdx[sp.family]
			if famStats[f] == nil {
				famStats[f] = g.scalarStat(f, w)
			}
			st = famStats[f]
		} else {
			f := binFamIdx[sp.family]
			if binStats[f] == nil {
				if dense == nil {
					dense = make([]int64, maxBin+1)
				}
				binStats[f] = g.binStat(f, w, dense, sp.info.Unit == "ms", needQ[f])
			}
			st = binStats[f]
		}
		out[k] = st.get(sp.stat)
	}
	return out
}

func (g *sideCells) weight(w []int32, c int) float64 {
	if w == nil {
		return 1
	}
	return float64(w[c])
}

func (g *sideCells) scalarStat(f int, w []int32) *famStat {
	var total, sum float64
	for c := range g.scnt[f] {
		x := g.weight(w, c)
		total += x * g.scnt[f][c]
		sum += x * g.ssum[f][c]
	}
	if total == 0 {
		return &famStat{empty: true}
	}
	st := &famStat{mean: sum / total}
	targets := [len(statQuantiles)]*float64{&st.p50, &st.p90, &st.p95, &st.p99, &st.p999}
	ranks := ranksFor(total)
	vals, cells := g.vals[f], g.cellOf[f]
	if g.chk[f] != nil {
		for q, r := range ranks {
			if v, ok := g.quantileAt(f, w, r); ok {
				*targets[q] = v
			}
		}
	} else {
		var cum float64
		q := 0
		for k, v := range vals {
			x := 1.0
			if w != nil {
				x = float64(w[cells[k]])
				if x == 0 {
					continue
				}
			}
			cum += x
			for q < len(ranks) && cum >= ranks[q] {
				*targets[q] = v
				q++
			}
			if q == len(ranks) {
				break
			}
		}
	}
	// The largest value of a cell drawn.
	for k := len(vals) - 1; k >= 0; k-- {
		if w == nil || w[cells[k]] != 0 {
			st.max = vals[k]
			break
		}
	}
	return st
}

// quantileAt is the first value of family f at which the cumulative weight reaches rank,
// found through the checkpoints (false: the weights never reach it).
func (g *sideCells) quantileAt(f int, w []int32, rank float64) (float64, bool) {
	chk, vals, cells := g.chk[f], g.vals[f], g.cellOf[f]
	before := func(j int) float64 { // weight of vals[:j*chkStride]
		row := chk[j*g.cells : (j+1)*g.cells]
		var s float64
		for c, n := range row {
			s += g.weight(w, c) * float64(n)
		}
		return s
	}
	// The last checkpoint whose weight before it is below rank (checkpoint 0 weighs 0).
	lo, hi := 0, len(chk)/g.cells-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if before(mid) < rank {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	cum := before(lo)
	for k := lo * chkStride; k < len(vals); k++ {
		x := g.weight(w, int(cells[k]))
		if x == 0 {
			continue
		}
		if cum += x; cum >= rank {
			return vals[k], true
		}
	}
	return 0, false
}

func (g *sideCells) binStat(f int, w []int32, dense []int64, micros, quantiles bool) *famStat {
	var total int64
	var sum float64
	lo, hi := len(dense), -1
	c := &g.bins[f]
	for cell := range g.bcnt[f] {
		x := int64(1)
		if w != nil {
			x = int64(w[cell])
		}
		if x == 0 {
			continue
		}
		total += x * g.bcnt[f][cell]
		sum += float64(x) * g.bsum[f][cell]
		if !quantiles {
			continue
		}
		a, b := c.start[cell], c.start[cell+1]
		if a == b {
			continue
		}
		bins, cnts := c.bin[a:b], c.cnt[a:b]
		lo, hi = min(lo, int(bins[0])), max(hi, int(bins[len(bins)-1]))
		for k, bin := range bins {
			dense[bin] += x * cnts[k]
		}
	}
	if total == 0 {
		return &famStat{empty: true}
	}
	st := &famStat{mean: sum / float64(total)}
	if !quantiles {
		return st
	}
	scale := 1.0
	if micros {
		scale = 1e-3
	}
	targets := [len(statQuantiles)]*float64{&st.p50, &st.p90, &st.p95, &st.p99, &st.p999}
	ranks := ranksFor(float64(total))
	var cum int64
	q := 0
	for b := lo; b <= hi; b++ {
		n := dense[b]
		if n == 0 {
			continue
		}
		dense[b] = 0
		cum += n
		v := binValue(uint32(b)) * scale
		for q < len(ranks) && float64(cum) >= ranks[q] {
			*targets[q] = v
			q++
		}
		st.max = v
	}
	return st
}
