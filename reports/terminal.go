package reports

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/llmbench/llmbench/metrics"
)

// termWidth is the widest line WriteTerminal produces for text it controls; outside text
// (warnings) is wrapped to it.
const termWidth = 100

// errWriter remembers the first write error so a writer function can report it once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err != nil {
		return
	}
	_, e.err = fmt.Fprintf(e.w, format, a...)
}

// field prints a labelled line, wrapped to termWidth with continuation lines indented.
func (e *errWriter) field(label, text string) {
	for i, line := range wrap(termSafe(text), termWidth-12) {
		if i == 0 {
			e.printf("%-12s%s\n", label, line)
		} else {
			e.printf("%-12s%s\n", "", line)
		}
	}
}

// termSafe replaces control characters (escape sequences, carriage returns) in outside text
// so a model name or error message cannot rewrite the user's terminal.
func termSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return '?'
		}
		return r
	}, s)
}

// WriteTerminal prints a compact summary table of s that fits 100 columns: the headline,
// requests, throughput, latency percentiles, stalls, fluidity, goodput, client health, the
// per-class breakdown and the warnings.
func WriteTerminal(w io.Writer, s *metrics.Summary) error {
	if s == nil {
		return fmt.Errorf("reports: WriteTerminal: nil summary")
	}
	e := &errWriter{w: w}
	writeTermHead(e, s)
	e.printf("\n")
	writeTermLatency(e, s.Latency)
	if c := latencyCoverage(s.Requests); c != "" {
		for _, line := range wrap(c, termWidth) {
			e.printf("%s\n", line)
		}
	}
	e.printf("\n")
	writeTermFields(e, s)
	writeTermClasses(e, s.ByClass)
	writeTermModels(e, s.ByModel) // per-request model (issue 38)
	writeCluster(e, s.Cluster)
	writeTermWarnings(e, s.Warnings)
	return e.err
}

// writeTermHead prints the run line, the headline, and the requests, throughput, tokens and
// inputs.
func writeTermHead(e *errWriter, s *metrics.Summary) {
	for _, line := range wrapParts(runParts(s.Run), " · ", termWidth) {
		e.printf("%s\n", termSafe(line))
	}
	for _, line := range wrap(termSafe(Headline(s)), termWidth) {
		e.printf("%s\n", line)
	}
	e.printf("\n")
	e.field("Requests", requestsLine(s.Requests))
	for _, line := range failureMessageLines(s.Requests) {
		e.printf("%-12s%s\n", "", line)
	}
	e.field("Throughput", fmt.Sprintf("%s req/s · %s input tok/s · %s output tok/s · window %s",
		fmtRate(s.Throughput.RequestsPerS), fmtRate(s.Throughput.InputTokensPerS),
		fmtRate(s.Throughput.OutputTokensPerS), fmtSeconds(s.Throughput.WindowS)))
	e.field("Tokens", tokensLine(s.Requests))
	if s.Inputs != nil {
		e.field("Inputs", termSafe(inputsLine(s.Inputs, s.Run.PromptSizing)))
	}
}

// writeTermLatency prints the latency table: one row per metric, one column per statistic.
func writeTermLatency(e *errWriter, l metrics.Latency) {
	e.printf("%-14s", "Latency (ms)")
	for _, st := range distStats {
		e.printf("%s", col(9, st.Label))
	}
	e.printf("%s\n", col(10, "count"))
	for _, row := range latencyRows(l) {
		if row.Key == "normalized" {
			continue
		}
		e.printf("%-14s", row.Label)
		for _, st := range distStats {
			e.printf("%s", col(9, fmtDistMs(row.D, st.Get(row.D))))
		}
		e.printf("%s\n", col(10, fmtInt(row.D.Count)))
	}
}

// writeTermFields prints the one-line fields after the latency table (stalls, fluidity,
// goodput, client health and those the run has) and the quality block.
func writeTermFields(e *errWriter, s *metrics.Summary) {
	e.field("Stalls", stallsLine(s.Stalls))
	e.field("Fluidity", fluidityLine(s.Fluidity))
	if s.Reasoning != nil {
		e.field("Reasoning", reasoningLine(s.Reasoning))
	}
	if ws, ok := workloadSessions(s.Workload); ok {
		e.field("Workload", workloadSessionsLine(ws))
	}
	if s.Sessions != nil {
		e.field("Sessions", sessionsLine(s.Sessions))
	}
	if s.PrefixCache != nil {
		e.field("Cache", prefixCacheLine(s.PrefixCache))
	}
	e.field("Goodput", goodputLine(s.Goodput, s.Requests.Total-s.Requests.Cancelled))
	e.field("Client", clientLine(s.Client))
	if s.TokensPerChunk.Count > 0 {
		e.field("Chunks", chunksLine(s))
	}
	if s.Cost != nil {
		e.field("Cost", costLine(s.Cost))
	}
	if s.Speculative != nil {
		e.field("Speculative", speculativeLine(s.Speculative)) // speculative.go
	}
	if s.ServerPrefixCache != nil {
		e.field("Cache hits", serverPrefixCacheLine(s.ServerPrefixCache))
	}
	if s.PrefixPriming != nil {
		e.field("Priming", prefixPrimingLine(s.PrefixPriming))
	}
	if s.Energy != nil {
		e.field("Energy", energyLine(s.Energy)) // issue 39: energy.go
	}
	if s.Quality != nil {
		writeQualityTerminal(e, s.Quality)
	}
}

// writeTermClasses prints the per-class table when there is more than one class.
func writeTermClasses(e *errWriter, byClass map[string]*metrics.ClassSummary) {
	if len(byClass) <= 1 {
		return
	}
	e.printf("\n%-18s%9s%8s%9s%10s%10s%10s%10s%9s\n", "Class (ms)", "requests", "failed",
		"req/s", "TTFT p99", "TPOT p99", "ITL p99", "E2E p99", "goodput")
	for _, name := range sortedKeys(byClass) {
		c := byClass[name]
		if c == nil {
			continue
		}
		e.printf("%-18s%s%s%s%s%s%s%s%s\n", clip(termSafe(name), 17),
			col(9, fmtInt(int64(c.Requests.Total))), col(8, fmtInt(int64(c.Requests.Failed))),
			col(9, fmtRate(c.Throughput.RequestsPerS)), col(10, fmtDistMs(c.Latency.TTFT, c.Latency.TTFT.P99)),
			col(10, fmtDistMs(c.Latency.TPOT, c.Latency.TPOT.P99)), col(10, fmtDistMs(c.Latency.ITL, c.Latency.ITL.P99)),
			col(10, fmtDistMs(c.Latency.E2E, c.Latency.E2E.P99)), col(9, goodputCell(c.Goodput)))
	}
}

// writeTermWarnings prints the warnings, each wrapped under a "!".
func writeTermWarnings(e *errWriter, warnings []string) {
	if len(warnings) == 0 {
		return
	}
	e.printf("\nWarnings\n")
	for _, wn := range warnings {
		for i, line := range wrap(termSafe(wn), termWidth-4) {
			if i == 0 {
				e.printf("  ! %s\n", line)
			} else {
				e.printf("    %s\n", line)
			}
		}
	}
}

// runLine is the first line of text outputs: what was run, against what, for how long, with
// which seeds.
func runLine(r metrics.RunInfo) string { return strings.Join(runParts(r), " · ") }

// runParts are runLine's parts. The load seed is shown unless the run was simulated (simulate
// synthesizes nothing and has no --seed); the engine seed whenever a reference engine served
// the run.
func runParts(r metrics.RunInfo) []string {
	parts := []string{"llmbench"}
	if r.Model != "" {
		parts = append(parts, "model "+r.Model)
	}
	parts = append(parts, modeLabel(r))
	parts = append(parts, fmtSeconds(r.DurationS))
	if r.Trace != "" {
		parts = append(parts, "trace "+r.Trace)
	}
	if r.Mode != "simulated" {
		parts = append(parts, fmt.Sprintf("seed %d", r.Seed))
	}
	if r.EngineSeed != 0 {
		parts = append(parts, fmt.Sprintf("engine seed %d", r.EngineSeed))
	}
	if c := r.Cold; c != nil {
		// run --cold (issue 45): how the run kept earlier prompts out of the cache.
		how := "cold: prompts salted " + strconv.FormatUint(c.Salt, 10)
		if c.Flushed != "" {
			how += ", cache flushed (" + c.Flushed + ")"
		} else {
			how += ", no flush offered"
		}
		parts = append(parts, how)
	} else if r.PromptSalt != 0 && r.SaltNonce == 0 {
		parts = append(parts, "prompts salted "+strconv.FormatUint(r.PromptSalt, 10))
	}
	return parts
}

// wrapParts joins parts with sep into lines of at most width runes, breaking only between
// parts (a part longer than width, such as a long trace path, gets a line of its own, whole).
func wrapParts(parts []string, sep string, width int) []string {
	var lines []string
	cur := ""
	for _, p := range parts {
		switch {
		case cur == "":
			cur = p
		case len([]rune(cur))+len([]rune(sep))+len([]rune(p)) <= width:
			cur += sep + p
		default:
			lines = append(lines, cur+strings.TrimRight(sep, " "))
			cur = p
		}
	}
	return append(lines, cur)
}

func requestsLine(q metrics.Requests) string {
	s := fmt.Sprintf("%s total · %s ok · %s failed", fmtInt(int64(q.Total)), fmtInt(int64(q.Succeeded)),
		fmtInt(int64(q.Failed)))
	if len(q.Failures) > 0 {
		var kinds []string
		for _, k := range countsByValue(q.Failures) {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, q.Failures[k]))
		}
		s += ": " + strings.Join(kinds, ", ")
	}
	if q.Dropped > 0 {
		s += fmt.Sprintf(" · %s dropped (never sent)", fmtInt(int64(q.Dropped)))
	}
	if q.Cancelled > 0 {
		s += " · " + cancelledText(q) // cancellations (cancelled.go)
	}
	return s
}

// latencyCoverage says which sent requests the latency table leaves out, when it leaves any:
// the failed ones, by kind, those given up on while waiting for the server marked as such
// (metrics.FailureKind.WaitedOut: the percentiles are then a survivors' view); "" when every
// sent request finished.
func latencyCoverage(q metrics.Requests) string {
	if q.Failed == 0 {
		return ""
	}
	var kinds []string
	waited := false
	for _, k := range countsByValue(q.Failures) {
		t := fmt.Sprintf("%s %s", k, fmtInt(int64(q.Failures[k])))
		if metrics.FailureKind(k).WaitedOut() {
			t += " (waited out)"
			waited = true
		}
		kinds = append(kinds, t)
	}
	s := fmt.Sprintf("Latency over the %s of %s sent requests that finished; not in it: %s", fmtInt(int64(q.Succeeded)),
		fmtInt(int64(q.Succeeded+q.Failed)), strings.Join(kinds, ", "))
	if waited {
		s += " — survivor bias: the requests that waited longest are missing (see the warnings)"
	}
	return s
}

// failureMessageLines lists the most common messages of each failure kind (most frequent kind
// first), one line each, cut to the terminal's width: "http_4xx ×14  HTTP 400: …".
func failureMessageLines(q metrics.Requests) []string {
	var lines []string
	for _, k := range countsByValue(q.Failures) {
		for _, m := range q.FailureMessages[k] {
			lines = append(lines, clip(termSafe(fmt.Sprintf("%s ×%s  %s", k, fmtInt(int64(m.Count)), m.Message)), termWidth-12))
		}
	}
	return lines
}

func tokensLine(q metrics.Requests) string {
	s := fmt.Sprintf("input %s · output %s", fmtInt(q.InputTokens), fmtInt(q.OutputTokens))
	if len(q.TokenSource) > 0 {
		var src []string
		for _, k := range sortedKeys(q.TokenSource) {
			src = append(src, k+" "+fmtInt(int64(q.TokenSource[k])))
		}
		s += " · counted by " + strings.Join(src, ", ")
	}
	if len(q.TokenAttribution) > 0 {
		var src []string
		for _, k := range sortedKeys(q.TokenAttribution) {
			src = append(src, k+" "+fmtInt(int64(q.TokenAttribution[k])))
		}
		s += " · per chunk by " + strings.Join(src, ", ")
	}
	if q.UsageRejected > 0 {
		s += " · usage rejected " + fmtInt(int64(q.UsageRejected))
	}
	return s + " · server mismatch " + fmtPct(q.TokenMismatch)
}

// chunksLine describes the shape of delivery: tokens per chunk and, where the summary has
// them, tokens per burst (chunks within the burst window of each other: one engine pass).
func chunksLine(s *metrics.Summary) string {
	d := s.TokensPerChunk
	line := fmt.Sprintf("tokens per chunk mean %s · p50 %s · p99 %s · max %s",
		fmtFixed(d.Mean, 2), fmtShort(d.P50), fmtShort(d.P99), fmtShort(d.Max))
	if b := s.TokensPerBurst; b.Count > 0 {
		line += fmt.Sprintf(" · per burst (chunks ≤ %s ms apart) mean %s · p50 %s · p99 %s · max %s",
			fmtShort(s.Stalls.BurstWindowMs), fmtFixed(b.Mean, 2), fmtShort(b.P50), fmtShort(b.P99), fmtShort(b.Max))
	}
	return line
}

// stallsLine names the stall threshold and its origin, then the stalls counted on the gaps
// between bursts.
func stallsLine(st metrics.Stalls) string {
	rule := ""
	if st.ThresholdRule != "" {
		rule = " (" + st.ThresholdRule + ")"
	}
	between := "gaps"
	if st.BurstWindowMs > 0 {
		between = "gaps between bursts"
	}
	return fmt.Sprintf("%s > %s ms%s: %s in %s requests (%s) · %s of decode time",
		between, fmtShort(st.ThresholdMs), rule, fmtInt(st.Count), fmtInt(st.RequestsWithStall),
		fmtPct(st.RequestFraction), fmtPct(st.StalledTimeFraction))
}

func reasoningLine(r *metrics.Reasoning) string {
	return fmt.Sprintf("%s requests · %s reasoning / %s answer tokens · time to first answer token p50 %s ms, p99 %s ms · ITL p50 reasoning %s ms, answer %s ms",
		fmtInt(int64(r.Requests)), fmtInt(r.ReasoningTokens), fmtInt(r.AnswerTokens),
		fmtDistMs(r.TTFAT, r.TTFAT.P50), fmtDistMs(r.TTFAT, r.TTFAT.P99),
		fmtDistMs(r.ITLReasoning, r.ITLReasoning.P50), fmtDistMs(r.ITLAnswer, r.ITLAnswer.P50))
}

func fluidityLine(f metrics.Fluidity) string {
	rule := ""
	if f.DeadlineRule != "" {
		rule = ", " + f.DeadlineRule
	}
	return fmt.Sprintf("mean %s, p1 %s, p5 %s, p50 %s; %s ≥ 0.9 (deadlines: TTFT %s ms, TBT %s ms%s)",
		fmtFixed(f.IndexMean, 3), fmtFixed(f.IndexP1, 3), fmtFixed(f.IndexP5, 3), fmtFixed(f.IndexP50, 3),
		fmtPct(f.FractionAbove90), fmtShort(f.TTFTDeadlineMs), fmtShort(f.TBTDeadlineMs), rule)
}

func goodputLine(g metrics.Goodput, total int) string {
	if len(g.SLO) == 0 && len(g.ClassSLO) == 0 {
		return "no SLO given (use --slo ttft=…,tpot=…)"
	}
	return fmt.Sprintf("%s req/s · %s met every SLO (%s of %s) · SLO %s",
		fmtRate(g.RequestsPerS), fmtPct(g.Fraction), fmtInt(int64(g.Met)), fmtInt(int64(total)), sloText(g))
}

// sloText lists the SLO limits, per class where they differ.
func sloText(g metrics.Goodput) string {
	var parts []string
	if len(g.SLO) > 0 {
		parts = append(parts, sloList(g.SLO))
	}
	for _, c := range sortedKeys(g.ClassSLO) {
		parts = append(parts, c+": "+sloList(g.ClassSLO[c]))
	}
	return strings.Join(parts, "; ")
}

func sloList(m map[string]float64) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s ≤ %s ms", k, fmtShort(m[k])))
	}
	return strings.Join(parts, ", ")
}

func goodputCell(g metrics.Goodput) string {
	if len(g.SLO) == 0 && len(g.ClassSLO) == 0 {
		return "-"
	}
	return fmtPct(g.Fraction)
}

// stealShown is the least CPU steal the client line shows (below it, "0.0%" says nothing;
// summary.json keeps the figure).
const stealShown = 0.001

func clientLine(c metrics.Client) string {
	s := fmt.Sprintf("%s · schedule lag p50 %s ms, p99 %s ms, max %s ms · client CPU %s",
		clientHealth(c), fmtDistMs(c.LagMs, c.LagMs.P50), fmtDistMs(c.LagMs, c.LagMs.P99),
		fmtDistMs(c.LagMs, c.LagMs.Max), fmtPct(c.CPUFraction))
	if c.CPUStealFraction >= stealShown {
		s += " · CPU steal " + fmtPct(c.CPUStealFraction)
	}
	return s
}

func costLine(c *metrics.Cost) string {
	return fmt.Sprintf("%s total · %s per request · %s per 1M output tokens (%s)",
		fmtMoney(c.Total, c.Currency), fmtMoney(c.PerRequest, c.Currency),
		fmtMoney(c.PerMillionOutput, c.Currency), c.Basis)
}

// clip shortens s to at most n runes, marking the cut with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// wrap breaks s into lines of at most width runes at spaces (a longer word gets its own line).
func wrap(s string, width int) []string {
	words := strings.Fields(s)
	if len(words) == 0 {
		return []string{""}
	}
	var lines []string
	cur := ""
	for _, w := range words {
		switch {
		case cur == "":
			cur = w
		case len([]rune(cur))+1+len([]rune(w)) <= width:
			cur += " " + w
		default:
			lines = append(lines, cur)
			cur = w
		}
	}
	return append(lines, cur)
}
