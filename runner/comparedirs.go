package runner

import (
	"fmt"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// DifferentTraceError says that two results directories replayed different traces.
type DifferentTraceError struct {
	BaseDir, CandDir string
	Base, Cand       *metrics.TraceFingerprint
	BaseTrace        string
	CandTrace        string
	What             []string // the fingerprint components that differ
}

func (e *DifferentTraceError) Error() string {
	return fmt.Sprintf("%s and %s replayed different traces (%s: %s, %s; %s: %s, %s; they differ in %s): a comparison pairs requests by id and would compare unlike with unlike; give --allow-different-trace to compare them anyway (unpaired)",
		e.BaseDir, e.CandDir, e.BaseDir, traceName(e.BaseTrace), e.Base.Short(), e.CandDir, traceName(e.CandTrace), e.Cand.Short(), strings.Join(e.What, ", "))
}

func traceName(s string) string {
	if s == "" {
		return "trace path not recorded"
	}
	return "trace " + s
}

// runInfoOf reads a results directory's run facts: summary.json's run block, else run.json
// (a run that has not finished or was killed).
func runInfoOf(dir string) (*metrics.RunInfo, error) {
	if s, err := ReadSummary(dir); err == nil {
		return &s.Run, nil
	}
	f, err := ReadRunFacts(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: no run facts (%s or %s): %w", dir, SummaryFile, RunFactsFile, err)
	}
	return &f.Run, nil
}

// CheckSameTrace returns a *DifferentTraceError when any directory replayed a different trace
// from base[0] (by trace fingerprint), and warnings for directories whose facts carry no
// fingerprint (results of an older llmbench) or cannot be read.
func CheckSameTrace(base, cand []string) (warnings []string, err error) {
	if len(base) == 0 {
		return nil, nil
	}
	ref, rerr := runInfoOf(base[0])
	if rerr != nil || ref.TraceFingerprint == nil {
		return []string{fmt.Sprintf("%s records no trace fingerprint: cannot check that both sides replayed the same trace", base[0])}, nil
	}
	for _, d := range append(append([]string{}, base[1:]...), cand...) {
		info, ierr := runInfoOf(d)
		if ierr != nil || info.TraceFingerprint == nil {
			warnings = append(warnings, fmt.Sprintf("%s records no trace fingerprint: cannot check that it replayed the same trace as %s", d, base[0]))
			continue
		}
		if what := ref.TraceFingerprint.Differences(info.TraceFingerprint); len(what) > 0 {
			return warnings, &DifferentTraceError{BaseDir: base[0], CandDir: d, Base: ref.TraceFingerprint, Cand: info.TraceFingerprint,
				BaseTrace: ref.Trace, CandTrace: info.Trace, What: what}
		}
	}
	return warnings, nil
}

// perRunKeys are run facts that differ between any two runs and are no configuration.
var perRunKeys = []string{"flag.out", "flag.no-progress", "flag.quiet", "flag.cpuprofile", "flag.memprofile", "flag.repeat-index"}

// AttachRunFacts fills what a comparison of results directories knows beyond the records:
// each side's run facts (the first directory's, in the "each side" block) and every
// configuration difference between base[0] and cand[0] (Comparison.ConfigDiff).
func AttachRunFacts(c *metrics.Comparison, base, cand []string) {
	if len(base) == 0 || len(cand) == 0 {
		return
	}
	c.Energy = metrics.CompareEnergy(dirsEnergy(base), dirsEnergy(cand)) // issue 39: scrape_energy.go
	attachSpeculative(c, base, cand)                                     // comparedirs_spec.go
	bi, berr := runInfoOf(base[0])
	ci, cerr := runInfoOf(cand[0])
	if berr != nil || cerr != nil {
		c.Warnings = append(c.Warnings, "configuration differences unknown: the run facts of a side cannot be read")
		return
	}
	if c.Base.Summary != nil {
		c.Base.Summary.Run = *bi
	}
	if c.Cand.Summary != nil {
		c.Cand.Summary.Run = *ci
	}
	if eq, warn, salted := saltedEquivalence(base, cand); salted {
		c.Equivalence = eq
		if warn != "" {
			c.Warnings = append(c.Warnings, warn)
		}
	}
	c.ConfigDiff = nil
	for _, d := range metrics.DiffRunConfigs(metrics.RunConfig(bi), metrics.RunConfig(ci), perRunKeys...) {
		// A server's per-process values (llama.cpp's media_marker, SGLang's random seed) are
		// no configuration difference (configdiff.go).
		if !(strings.HasPrefix(d.Key, "engine.") && VolatileConfigKey(d.Key)) {
			c.ConfigDiff = append(c.ConfigDiff, d)
		}
	}
	if c.ConfigDiff == nil {
		c.ConfigDiff = []metrics.ConfigDifference{}
	}
}

// DesignedHitRate is the designed prefix-cache hit rate of the runs in dirs pooled together,
// from their summaries (metrics.PooledDesignedHitRate), for the confound check of a
// comparison (metrics.CompareOptions.DesignedHitRate); nil when a summary cannot be read or
// has none.
func DesignedHitRate(dirs []string) *float64 {
	sums := make([]*metrics.Summary, 0, len(dirs))
	for _, d := range dirs {
		s, err := ReadSummary(d)
		if err != nil {
			return nil
		}
		sums = append(sums, s)
	}
	return metrics.PooledDesignedHitRate(sums)
}
