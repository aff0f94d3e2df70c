package usecase

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/llmbench/llmbench/traces"
)

// TraceStatsOptions are `llmbench trace stats`'s options.
type TraceStatsOptions struct {
	Path    string
	JSON    bool // the stats as JSON (the summary.json "workload" block)
	Lenient bool
	// BlockTokens are the prompt tokens per hash_ids block for prefix reuse.
	BlockTokens int
}

// TraceStats describes a trace on stdout.
func TraceStats(env *Env, o *TraceStatsOptions) error {
	reqs, err := traces.ReadFile(o.Path, traces.ReadOptions{Lenient: o.Lenient})
	if err != nil {
		return err
	}
	st := traces.ComputeStatsBlocks(reqs, o.BlockTokens)
	if o.JSON {
		return writeJSON(env.Stdout, st)
	}
	printStats(env.Stdout, o.Path, st)
	return nil
}

func printStats(w io.Writer, name string, st traces.Stats) {
	lengths := func(l traces.LengthStats) string {
		return fmt.Sprintf("mean %.1f  p50 %d  p90 %d  p99 %d  max %d  (min %d)", l.Mean, l.P50, l.P90, l.P99, l.Max, l.Min)
	}
	fmt.Fprintf(w, "trace           %s\n", name)
	fmt.Fprintf(w, "requests        %d over %.2f s (%.3f req/s)\n", st.Count, st.DurationS, st.RatePerS)
	fmt.Fprintf(w, "burstiness      %.3f (CV of inter-arrival gaps: 0 even, 1 Poisson, >1 bursty)\n", st.Burstiness)
	fmt.Fprintf(w, "input tokens    %s\n", lengths(st.InputTokens))
	fmt.Fprintf(w, "output tokens   %s\n", lengths(st.OutputTokens))
	fmt.Fprintf(w, "prefill:decode  %.2f (%d input / %d output tokens)\n", st.PrefillDecodeRatio, st.TotalInputTokens, st.TotalOutputTokens)
	if len(st.Classes) > 0 {
		names := make([]string, 0, len(st.Classes))
		for c := range st.Classes {
			names = append(names, c)
		}
		sort.Slice(names, func(i, j int) bool {
			if st.Classes[names[i]] != st.Classes[names[j]] {
				return st.Classes[names[i]] > st.Classes[names[j]]
			}
			return names[i] < names[j]
		})
		var parts []string
		for _, c := range names {
			parts = append(parts, fmt.Sprintf("%s %d", c, st.Classes[c]))
		}
		fmt.Fprintf(w, "classes         %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "prefix reuse    %.1f%% of input tokens (%d tokens, %d-token blocks)\n", 100*st.PrefixReuse, st.PrefixReuseTokens, st.BlockTokens)
	fmt.Fprintf(w, "sessions        %d", st.Sessions)
	if st.Sessions > 0 {
		fmt.Fprintf(w, " (up to %d turns)", st.MaxTurn)
	}
	fmt.Fprintf(w, "\ntext            %d with prompt, %d with messages, %d token counts only\n", st.WithPrompt, st.Chat, st.Count-st.WithPrompt-st.Chat)
	if st.Images > 0 {
		fmt.Fprintf(w, "images          %d in %d requests\n", st.Images, st.WithImages)
	}
	if a := st.Agentic; a != nil {
		t := a.TurnsPerSession
		fmt.Fprintf(w, "turns/session   min %d  mean %.1f  p50 %d  p90 %d  max %d\n", t.Min, t.Mean, t.P50, t.P90, t.Max)
		f := a.FanOut
		fmt.Fprintf(w, "fan-out         %d turns fan out to 2+ (mean %.2f, max %d waiting on one turn), %d joins\n", a.FanOutTurns, f.Mean, f.Max, a.JoinTurns)
		d := a.ToolDelayMs
		fmt.Fprintf(w, "tool delay      %d turns · mean %.1f  p50 %.1f  p90 %.1f  p99 %.1f  max %.1f ms\n", d.Count, d.Mean, d.P50, d.P90, d.P99, d.Max)
		if a.WithAffinity > 0 {
			fmt.Fprintf(w, "affinity        %d requests carry an explicit key\n", a.WithAffinity)
		}
	}
}
