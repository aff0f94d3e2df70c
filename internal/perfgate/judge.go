package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/llmbench/llmbench/metrics"
)

// familyAlpha is the chance the gate fails an A/A comparison at most (false alarm), over all
// its figures together: each figure's interval is two-sided at 1 − 2·familyAlpha/k for k
// figures (Bonferroni), so each fails on its worse side with chance at most familyAlpha/k.
const familyAlpha = 0.05

// gateConfidence is the two-sided confidence of each of k figures' intervals.
func gateConfidence(k int) float64 { return 1 - 2*familyAlpha/float64(max(k, 1)) }

// round is one round's measurements, by kind, of each build.
type round struct {
	Base map[string]measurement `json:"base"`
	Head map[string]measurement `json:"head"`
}

// row is one figure's judgement.
type row struct {
	Figure     string  `json:"figure"`
	Unit       string  `json:"unit"`
	BaseMedian float64 `json:"base_median"`
	HeadMedian float64 `json:"head_median"`
	// Floored counts the values raised to the figure's floor (figure.floor).
	Floored int `json:"floored,omitempty"`
	metrics.PairedRatio
	format string
}

// verdict is the gate's judgement: a row per figure, the notes on how noisy the machine was
// and what each design can detect, and whether any figure regressed.
type verdict struct {
	Rows       []row    `json:"figures"`
	Confidence float64  `json:"confidence"`
	Notes      []string `json:"notes"`
	Regressed  []string `json:"regressed"`
}

// judge compares head with base per figure over the rounds (metrics.ComparePairedRatio).
func judge(rounds []round, figs []figure) (verdict, error) {
	v := verdict{Confidence: gateConfidence(len(figs)), Regressed: []string{}}
	var weak []string
	for _, f := range figs {
		var base, head []float64
		floored := 0
		for _, r := range rounds {
			b, okb := r.Base[f.kind].Values[f.name]
			h, okh := r.Head[f.kind].Values[f.name]
			if !okb || !okh {
				continue
			}
			if b < f.floor || math.IsNaN(b) {
				b, floored = f.floor, floored+1
			}
			if h < f.floor || math.IsNaN(h) {
				h, floored = f.floor, floored+1
			}
			base, head = append(base, b), append(head, h)
		}
		pr, err := metrics.ComparePairedRatio(base, head, f.better, v.Confidence, f.minEffect)
		if err != nil {
			return verdict{}, fmt.Errorf("%s: %w", f.name, err)
		}
		v.Rows = append(v.Rows, row{Figure: f.name, Unit: f.unit, BaseMedian: median(base), HeadMedian: median(head), Floored: floored, PairedRatio: pr, format: f.format})
		if pr.Verdict == metrics.VerdictRegressed {
			v.Regressed = append(v.Regressed, f.name)
		}
		if pr.Verdict != metrics.VerdictRegressed && pr.MDE > f.minEffect {
			weak = append(weak, fmt.Sprintf("%s %s (min %s)", f.name, mdeText(pr), pct(f.minEffect)))
		}
		if floored > 0 {
			v.Notes = append(v.Notes, fmt.Sprintf("%s: %d values below its floor counted as %g (%s)", f.name, floored, f.floor, f.why))
		}
	}
	if len(weak) > 0 {
		v.Notes = append(v.Notes, fmt.Sprintf("the smallest change these rounds detect with %.0f%% power (MDE) is above the figure's minimum effect, so a regression between the two would likely pass (more rounds narrow it): %s",
			metrics.MDEPower*100, strings.Join(weak, ", ")))
	}
	v.Notes = append(hostNotes(rounds), v.Notes...)
	return v, nil
}

// hostNotes say when the machine was noisy while measuring: CPU steal above
// metrics.StealWarning, a 1-minute load average above twice the cores (the gate's own
// measurements, back to back, keep it near the cores), the long-streams wake floor above 1 ms.
// Noise widens the intervals; it never fails the gate by itself.
func hostNotes(rounds []round) []string {
	var steal, load, wake float64
	var noisy, n, cores int
	var failed []string
	for _, r := range rounds {
		for _, side := range []map[string]measurement{r.Base, r.Head} {
			for _, m := range side {
				n++
				steal, wake = max(steal, m.Steal), max(wake, m.WakeFloorMs)
				if m.Cores > 0 {
					load, cores = max(load, m.Load), m.Cores
				}
				if m.Steal > metrics.StealWarning || (m.Cores > 0 && m.Load > 2*float64(m.Cores)) || m.WakeFloorMs > 1 {
					noisy++
				}
				if m.Note != "" {
					failed = append(failed, m.Note)
				}
			}
		}
	}
	var notes []string
	if steal > metrics.StealWarning {
		notes = append(notes, fmt.Sprintf("host: CPU steal up to %s (the hypervisor gave that share of the CPUs to other machines): the timing figures include stalls no build removes", pct(steal)))
	}
	if cores > 0 && load > 2*float64(cores) {
		notes = append(notes, fmt.Sprintf("host: 1-minute load average up to %.1f on %d cores: other processes competed for the CPUs", load, cores))
	}
	if wake > 1 {
		notes = append(notes, fmt.Sprintf("host: the long-streams wake floor (how late a 1 ms sleep wakes with nothing else running) reached %.2f ms P99", wake))
	}
	if noisy > 0 {
		notes = append(notes, fmt.Sprintf("host: %d of %d measurements on a noisy machine: their rounds disagree more, which widens the intervals rather than failing the gate", noisy, n))
	}
	if len(failed) > 0 {
		slices.Sort(failed)
		notes = append(notes, "measurements with failures: "+strings.Join(slices.Compact(failed), "; "))
	}
	return notes
}

// print writes the table and the notes.
func (v verdict) print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "figure\tbetter\tbase median\thead median\tratio\t%s interval\tMDE\tmin effect\tverdict\t\n", pct(v.Confidence))
	for _, r := range v.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t[%s, %s]\t%s\t%s\t%s\t\n", r.Figure, r.Better,
			fmt.Sprintf(r.format, r.BaseMedian)+" "+r.Unit, fmt.Sprintf(r.format, r.HeadMedian)+" "+r.Unit,
			ratioText(r.Ratio), ratioText(r.Lo), ratioText(r.Hi), mdeText(r.PairedRatio), pct(r.MinEffect), r.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range v.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

// mdeText prints the MDE; beyond 1000% it says only that.
func mdeText(p metrics.PairedRatio) string {
	switch {
	case p.Verdict == metrics.VerdictNotAssessable:
		return "-"
	case p.MDE > 10:
		return ">1000%"
	}
	return pct(p.MDE)
}

// ratioText prints a ratio to three decimals, and one far from 1 (a few rounds on a busy
// machine) in three significant digits.
func ratioText(r float64) string {
	if r >= 1000 || (r > 0 && r < 0.001) {
		return fmt.Sprintf("%.3g", r)
	}
	return fmt.Sprintf("%.3f", r)
}

// pct prints a fraction as a percentage with up to two decimals.
func pct(f float64) string {
	s := fmt.Sprintf("%.2f", f*100)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "%"
}

// median of v (0 for none); v is not changed.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
