package metrics

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Histogram names, as used in Summary.Histograms. Durations are in µs, "tokens_per_chunk" in
// tokens and "fluidity" in index * 1000 (exact: 0.001 steps). Keys are NAME for the headline (steady state),
// "class/CLASS/NAME" per class and "PHASE/NAME" for an excluded phase ("warmup/ttft").
const (
	hTTFT = iota
	hTPOT
	hITL
	hITLChunk
	hITLBurst
	hE2E
	hQueue
	hMaxGap
	hNorm
	hTPC
	hTPB
	hFluid
	hLag
	hTTFAT
	hITLReasoning
	hITLAnswer
	// Agentic sessions: one value per session (sessions.go), recorded in the headline group.
	hSessionWall
	hSessionModel
	hSessionTool
	hSessionThink
	nHist
)

// histNames are the registry's family names by histogram index (registry.go).
var histNames = func() (n [nHist]string) {
	for i, f := range families {
		n[i] = f.Name
	}
	return n
}()

func histScale(i int) float64 { return families[i].Scale }

// noClass is the by_class key of records without a class when other records have one.
const noClass = "(none)"

// MaxClasses bounds by_class: records of classes beyond the first MaxClasses seen are counted
// under otherClass (with a warning), so that a trace with a class per request cannot make
// memory grow with the number of records.
const MaxClasses = 64

const otherClass = "(other)"

// group accumulates one set of records: the headline, a class or an excluded phase.
type group struct {
	req Requests
	h   [nHist]*hist

	stallCount, stallReqs, stalledNs, decodeNs int64
	fluidGE90                                  int64
	met                                        int
	okIn, okOut                                int64
	mismatch                                   int
	wire                                       wireGroup
	winStart, winEnd                           int64
	hasWin                                     bool
	failMsgs                                   failTally
	q                                          qualTally // quality grades (issue 17)
	// tpb tallies bursts by token count until settleBursts moves it into hTPB (bursts.go).
	tpb           [tpbSmall]int64
	burstsSettled bool
	// spec tallies decode bursts and the responses' speculative fields (speculative.go).
	spec specTally
	// waited holds, for the requests given up on while waiting for the server
	// (FailureKind.WaitedOut), a lower bound of their TTFT: their own when a token came, else
	// how long they had waited (survivor.go).
	waited *hist
}

func newGroup() *group {
	g := &group{req: Requests{Failures: map[string]int{}, FailStatus: map[string]int{}, TokenSource: map[string]int{}}}
	for i := range g.h {
		g.h[i] = newHist()
	}
	return g
}

// summarizer holds the state of one Summarize call.
type summarizer struct {
	opts     Options
	dl       fluidityDeadlines
	head     *group
	classes  map[string]*group
	overflow int // steady records whose class was folded into otherClass
	phases   map[string]*group
	anyClass bool
	scratch  []int64

	maxT       int64 // latest time seen, for the time series
	warmEnd    int64 // earliest intended time of a steady record after warm-up
	coolStart  int64 // earliest intended time of a cool-down record
	hasWarm    bool
	hasCool    bool
	threshold  int64
	thrSource  string        // where the threshold came from (Stalls.Source)
	cadence    time.Duration // the median per-burst ITL a derived threshold came from
	thrSLO     time.Duration // the SLO limit an SLO-derived threshold came from
	dlRule     string        // where the fluidity deadlines came from
	ts         *tsBuilder
	records    int
	truncation error
	// gradeExamples holds the first failing request per grade (issue 17).
	gradeExamples map[string]string
	sess          sessionTracker // agentic sessions
	prefix        prefixTally    // prefix-cache reuse (prefixcache.go)
	inputs        inputTally     // intended vs server-counted prompt tokens (inputs.go)

	models map[string]*group // per-request model (issue 38; models.go)
}

// Summarize computes a Summary from the records of src, following the package's measurement
// rules: only steady-state records feed the headline numbers (warm-up and cool-down are in
// Excluded), failed requests never enter latency distributions but count in goodput's
// denominator and in failures by kind, and latency is measured from the intended send time.
// It makes two passes over src (the second applies the stall threshold and builds the time
// series); memory is bounded by the histograms and the time series, not the record count.
// Run and Workload are left for the caller to fill.
func Summarize(src Source, opts Options) (*Summary, error) {
	s := &summarizer{
		opts:    opts.withDefaults(),
		head:    newGroup(),
		classes: map[string]*group{},
		phases:  map[string]*group{},
	}
	s.dl = s.opts.deadlines()
	s.prefix.designed = opts.DesignedReuse
	if err := s.pass(src, s.first); err != nil {
		return nil, err
	}
	s.deriveFromRun(opts)
	s.ts = newTSBuilder(s.opts.Bucket, s.maxT)
	if err := s.pass(src, s.second); err != nil {
		return nil, err
	}
	return s.build()
}

func (s *summarizer) pass(src Source, fn func(*Record)) error {
	n := 0
	err := src.Each(func(r *Record) error {
		n++
		fn(r)
		return nil
	})
	s.records = n
	if err != nil {
		if errors.Is(err, ErrTruncated) {
			s.truncation = err
			return nil
		}
		return fmt.Errorf("read records: %w", err)
	}
	return nil
}

// groupsOf returns the groups a record belongs to (at most two).
func (s *summarizer) groupsOf(r *Record, create bool) (*group, *group) {
	switch r.Phase {
	case PhaseSteady:
		key := r.Class
		if key == "" {
			key = noClass
		}
		cg := s.classes[key]
		if cg == nil && len(s.classes) >= MaxClasses {
			if create {
				s.overflow++
			}
			key = otherClass
			cg = s.classes[key]
		}
		if cg == nil && create {
			cg = newGroup()
			s.classes[key] = cg
		}
		return s.head, cg
	default:
		g := s.phases[r.Phase]
		if g == nil && create {
			g = newGroup()
			s.phases[r.Phase] = g
		}
		return g, nil
	}
}

func (s *summarizer) first(r *Record) {
	if r.Class != "" && r.Phase == PhaseSteady {
		s.anyClass = true
	}
	for _, t := range [...]int64{r.End, r.Intended, r.Sent, r.FirstToken} {
		if r.Failure == FailDropped && t == r.Intended {
			continue // a never-sent request's plan is not part of the run's timeline
		}
		if t > s.maxT {
			s.maxT = t
		}
	}
	if n := len(r.Chunks); n > 0 && r.Chunks[n-1].T > s.maxT {
		s.maxT = r.Chunks[n-1].T
	}
	switch r.Phase {
	case PhaseWarmup:
		s.hasWarm = true
	case PhaseCooldown:
		if !s.hasCool || r.Intended < s.coolStart {
			s.coolStart = r.Intended
		}
		s.hasCool = true
	case PhaseSteady:
		if s.head.req.Total == 0 || r.Intended < s.warmEnd {
			s.warmEnd = r.Intended
		}
	}
	s.inputs.add(r, s.opts.inputTolerance())
	if r.Phase == PhaseSteady {
		s.noteGrade(r)
	}
	s.sess.add(r, 0)
	s.prefix.add(r)
	g, cg := s.groupsOf(r, true)
	s.add(g, r, true)
	if cg != nil {
		s.add(cg, r, false)
	}
	if mg := s.modelGroup(r, true); mg != nil {
		s.add(mg, r, false)
	}
}

// add accumulates r into g; window is true for the groups whose span is tracked (the
// headline and the excluded phases; classes use the headline's window).
func (s *summarizer) add(g *group, r *Record, window bool) {
	g.req.Total++
	g.q.add(r.Grade)
	if r.Failure == FailDropped {
		g.req.Dropped++ // never sent: no tokens, no window, not a failure
		return
	}
	g.req.OutputTokens += int64(r.OutputTokens)
	src := r.TokenSource
	if src == "" {
		src = "unknown"
	}
	g.req.TokenSource[src]++
	if r.Dispatched > 0 {
		g.h[hLag].recordNs(r.Dispatched - r.Intended)
	}
	if window {
		end := r.End
		if end <= 0 {
			end = r.Intended
		}
		if !g.hasWin || r.Intended < g.winStart {
			g.winStart = r.Intended
		}
		if !g.hasWin || end > g.winEnd {
			g.winEnd = end
		}
		g.hasWin = true
	}
	if r.Cancelled() {
		g.req.Cancelled++ // neither success nor failure: its tokens are counted above
		return
	}
	if !r.OK() {
		g.req.Failed++
		g.req.Failures[string(r.Failure)]++
		g.addWaited(r)
		if r.Error != "" {
			if g.failMsgs == nil {
				g.failMsgs = failTally{}
			}
			g.failMsgs.add(r.Failure, r.Error)
		}
		if r.Status != 0 {
			g.req.FailStatus[strconv.Itoa(r.Status)]++
		}
		return
	}
	g.req.Succeeded++
	g.addInput(r)
	g.okOut += int64(r.OutputTokens)
	s.addProvenance(g, r)
	if r.FirstToken > 0 {
		g.h[hTTFT].recordNs(r.FirstToken - r.Intended)
	}
	if ns, ok := ttfatNs(r); ok {
		g.h[hTTFAT].recordNs(ns)
	}
	if r.End > 0 {
		g.h[hE2E].recordNs(r.End - r.Intended)
		if r.OutputTokens > 0 {
			g.h[hNorm].recordNs((r.End - r.Intended) / int64(r.OutputTokens))
		}
	}
	if r.Sent > 0 && r.Dispatched > 0 {
		g.h[hQueue].recordNs(r.Sent - r.Dispatched)
	}
	if v, ok := tpotNs(r); ok {
		g.h[hTPOT].recordNs(v)
	}
	g.addChunks(r.Chunks)
	g.spec.addResponse(r)
	if v, ok := maxGapNs(r.Chunks); ok {
		g.h[hMaxGap].recordNs(v)
	}
	if s.meets(r) {
		g.met++
	}
}

// addChunks records a successful request's chunks: tokens per chunk, ITL per chunk and per
// token, and the bursts' tokens (bursts.go; ITL per burst is settled from ITL per chunk).
func (g *group) addChunks(chunks []Chunk) {
	var burst int64 // tokens of the burst in progress
	nb := 0         // bursts completed
	for i, c := range chunks {
		k := chunkTokens(c)
		g.h[hTPC].recordValue(k)
		if i > 0 {
			gap := c.T - chunks[i-1].T
			g.h[hITLChunk].recordNs(gap)
			g.h[hITL].recordNs(gap)
			if burstGap(gap) {
				g.noteBurst(burst)
				if nb++; nb > 1 {
					g.spec.noteDecodeBurst(burst) // neither the first burst nor the last
				}
				burst = 0
			}
		}
		burst += k
		g.h[hITL].recordValues(0, k-1)
	}
	if burst > 0 {
		g.noteBurst(burst)
	}
}

// meets reports whether a successful request meets its class's SLO.
func (s *summarizer) meets(r *Record) bool {
	slo := s.opts.sloFor(r.Class)
	if slo.TTFT > 0 && (r.FirstToken <= 0 || r.FirstToken-r.Intended > int64(slo.TTFT)) {
		return false
	}
	if slo.E2E > 0 && r.End-r.Intended > int64(slo.E2E) {
		return false
	}
	if slo.TPOT > 0 {
		if v, ok := tpotNs(r); ok && v > int64(slo.TPOT) {
			return false
		}
	}
	if slo.MaxGap > 0 {
		if v, ok := maxGapNs(r.Chunks); ok && v > int64(slo.MaxGap) {
			return false
		}
	}
	if slo.ITLP99 > 0 {
		var v int64
		var ok bool
		v, ok, s.scratch = itlP99Ns(r.Chunks, s.scratch)
		if ok && v > int64(slo.ITLP99) {
			return false
		}
	}
	return true
}

func (s *summarizer) second(r *Record) {
	s.ts.add(r)
	if !r.OK() {
		return
	}
	g, cg := s.groupsOf(r, false)
	for _, x := range [...]*group{g, cg, s.modelGroup(r, false)} {
		if x == nil {
			continue
		}
		n, stalled := stallStats(r.Chunks, s.threshold)
		x.stallCount += n
		x.stalledNs += stalled
		if n > 0 {
			x.stallReqs++
		}
		if r.FirstToken > 0 && r.End > r.FirstToken {
			x.decodeNs += r.End - r.FirstToken
		}
		if idx, ok := fluidityIndex(r, s.dl); ok {
			x.h[hFluid].recordValue(int64(math.Round(idx * fluidityScal)))
			if idx >= 0.9 {
				x.fluidGE90++
			}
		}
	}
}

func (g *group) requests() Requests {
	r := g.req
	r.FailureMessages = g.failMsgs.top()
	if r.TokenCompared > 0 {
		r.TokenMismatch = float64(g.mismatch) / float64(r.TokenCompared)
	}
	return r
}

func (g *group) latency() Latency {
	d := func(i int) Dist { return g.h[i].dist(histScale(i)) }
	return Latency{
		TTFT: d(hTTFT), TPOT: d(hTPOT), ITL: d(hITL), ITLChunk: d(hITLChunk), ITLBurst: d(hITLBurst), E2E: d(hE2E),
		Queue: d(hQueue), MaxGap: d(hMaxGap), Normalized: d(hNorm),
	}
}

func (g *group) throughput(winStart, winEnd int64) Throughput {
	t := Throughput{WindowStartS: seconds(winStart), WindowEndS: seconds(winEnd)}
	t.WindowS = t.WindowEndS - t.WindowStartS
	if t.WindowS > 0 {
		t.RequestsPerS = float64(g.req.Succeeded) / t.WindowS
		t.InputTokensPerS = float64(g.okIn) / t.WindowS
		t.OutputTokensPerS = float64(g.okOut) / t.WindowS
	}
	return t
}

func (s *summarizer) stalls(g *group) Stalls {
	st := Stalls{
		ThresholdMs:       float64(s.threshold) / 1e6,
		ThresholdRule:     s.thresholdRule(),
		Source:            s.thrSource,
		BurstCadenceMs:    ms(s.cadence),
		BurstWindowMs:     ms(BurstWindow),
		Count:             g.stallCount,
		RequestsWithStall: g.stallReqs,
		StalledTimeMs:     float64(g.stalledNs) / 1e6,
		DecodeTimeMs:      float64(g.decodeNs) / 1e6,
	}
	if g.req.Succeeded > 0 {
		st.RequestFraction = float64(g.stallReqs) / float64(g.req.Succeeded)
	}
	if g.decodeNs > 0 {
		st.StalledTimeFraction = float64(g.stalledNs) / float64(g.decodeNs)
	}
	return st
}

func (s *summarizer) fluidity(g *group) Fluidity {
	f := fluidityBlock(g.h[hFluid], g.fluidGE90, ms(s.dl.ttft), ms(s.dl.tbt))
	f.DeadlineRule = s.dlRule
	return f
}

// fluidityBlock summarizes a fluidity histogram; ge90 counts requests with index >= 0.9.
func fluidityBlock(h *hist, ge90 int64, ttftMs, tbtMs float64) Fluidity {
	f := Fluidity{TTFTDeadlineMs: ttftMs, TBTDeadlineMs: tbtMs}
	if n := h.count(); n > 0 {
		f.IndexMean = h.mean() / fluidityScal
		f.IndexP1 = float64(h.quantile(1)) / fluidityScal
		f.IndexP5 = float64(h.quantile(5)) / fluidityScal
		f.IndexP50 = float64(h.quantile(50)) / fluidityScal
		f.FractionAbove90 = float64(ge90) / float64(n)
	}
	return f
}

func (s *summarizer) goodput(g *group, slo map[string]float64, windowS float64) Goodput {
	gp := Goodput{SLO: slo, Met: g.met}
	if n := g.req.Total - g.req.Cancelled; n > 0 {
		gp.Fraction = float64(g.met) / float64(n)
	}
	if windowS > 0 {
		gp.RequestsPerS = float64(g.met) / windowS
	}
	return gp
}

func (s *summarizer) build() (*Summary, error) {
	h := s.head
	h.settleBursts()
	for _, g := range s.classes {
		g.settleBursts()
	}
	for _, g := range s.phases {
		g.settleBursts()
	}
	sum := &Summary{
		Schema:         SummarySchema,
		Requests:       h.requests(),
		Latency:        h.latency(),
		Stalls:         s.stalls(h),
		Fluidity:       s.fluidity(h),
		TokensPerChunk: h.h[hTPC].dist(scaleCount),
		TokensPerBurst: h.h[hTPB].dist(scaleCount),
		ByClass:        map[string]*ClassSummary{},
		Histograms:     map[string]string{},
		Warnings:       []string{},
	}
	sum.Sessions = s.sessions(h)
	sum.PrefixCache = s.prefix.block()
	if err := s.prefix.encode(sum.Histograms); err != nil {
		return nil, err
	}
	sum.Throughput = h.throughput(h.winStart, h.winEnd)
	sum.Goodput = s.goodput(h, s.opts.SLO.millisMap(), sum.Throughput.WindowS)
	if len(s.opts.ClassSLO) > 0 {
		sum.Goodput.ClassSLO = map[string]map[string]float64{}
		for c, slo := range s.opts.ClassSLO {
			sum.Goodput.ClassSLO[c] = slo.millisMap()
		}
	}
	sum.Client = s.client(h)
	if err := encodeGroup(sum.Histograms, "", h); err != nil {
		return nil, err
	}
	sum.Reasoning = h.reasoning()
	sum.ByModel = s.byModel(h) // per-request model (issue 38)
	for name, g := range s.classes {
		if !s.anyClass {
			break // no record has a class: by_class stays empty
		}
		cs := &ClassSummary{
			Requests:   g.requests(),
			Throughput: g.throughput(h.winStart, h.winEnd),
			Latency:    g.latency(),
			Stalls:     s.stalls(g),
			Fluidity:   s.fluidity(g),
		}
		slo := s.opts.sloFor(name)
		if name == noClass {
			slo = s.opts.SLO
		}
		cs.Goodput = s.goodput(g, slo.millisMap(), cs.Throughput.WindowS)
		sum.ByClass[name] = cs
		if err := encodeGroup(sum.Histograms, "class/"+name+"/", g); err != nil {
			return nil, err
		}
	}
	if len(s.phases) > 0 {
		sum.Excluded = map[string]*PhaseSummary{}
		for name, g := range s.phases {
			sum.Excluded[name] = &PhaseSummary{Requests: g.requests(), Latency: g.latency()}
			if err := encodeGroup(sum.Histograms, name+"/", g); err != nil {
				return nil, err
			}
		}
	}
	sum.Cost = costOf(s.opts, sum)
	sum.Quality = s.quality()
	sum.TimeSeries = s.ts.build()
	if s.hasWarm {
		sum.TimeSeries.WarmupEndS = seconds(s.warmEnd)
	}
	if s.hasCool {
		sum.TimeSeries.CooldownStartS = seconds(s.coolStart)
	}
	sum.Inputs = s.inputs.check(s.opts.inputTolerance())
	sum.Warnings = s.warnings(sum)
	h.spec.attach(sum) // speculative.go
	return sum, nil
}

// encodeGroup writes g's histograms into dst. ITL per burst is left out: it is the part of
// itl_chunk above the burst window, which a reader derives exactly (bursts.go, merge.go), and an
// encoding costs as much as itl_chunk's.
func encodeGroup(dst map[string]string, prefix string, g *group) error {
	for i, hh := range g.h {
		if hh.count() == 0 || i == hITLBurst {
			continue
		}
		enc, err := hh.encode()
		if err != nil {
			return fmt.Errorf("%s%s: %w", prefix, histNames[i], err)
		}
		dst[prefix+histNames[i]] = enc
	}
	return nil
}

func (s *summarizer) client(h *group) Client {
	c := Client{LagMs: h.h[hLag].dist(scaleMicrosToMs), CPUFraction: s.opts.ClientCPUFraction, CPUStealFraction: max(0, s.opts.ClientStealFraction)}
	c.Limited, c.Reason = clientLimited(c.LagMs.P99, c.CPUFraction, ms(s.opts.LagLimit), s.opts.CPULimit)
	if n := h.req.Failures[string(FailClientFDLimit)]; n > 0 {
		// Running out of file descriptors is the client's limit (issue 18).
		why := fmt.Sprintf("client-limited: %d requests failed because the client ran out of file descriptors (%s); raise ulimit -n or use --http2", n, FailClientFDLimit)
		if c.Reason != "" {
			why = c.Reason + "; " + why
		}
		c.Limited, c.Reason = true, why
	}
	return c
}

// clientLimited applies the client-health rules.
func clientLimited(lagP99Ms, cpu, lagLimitMs, cpuLimit float64) (bool, string) {
	var reasons []string
	if lagP99Ms > lagLimitMs {
		reasons = append(reasons, fmt.Sprintf("client-limited: schedule lag P99 %.1f ms exceeds %g ms; numbers are not valid", lagP99Ms, lagLimitMs))
	}
	if cpu > cpuLimit {
		reasons = append(reasons, fmt.Sprintf("client-limited: client CPU use %.0f%% exceeds %.0f%% of the machine; latencies may include the client's own delay", cpu*100, cpuLimit*100))
	}
	return len(reasons) > 0, strings.Join(reasons, "; ")
}

// StealWarning is the CPU steal above which a summary warns that the host took a share of
// the client machine's CPUs.
const StealWarning = 0.02

func stealWarning(steal float64) string {
	if steal <= StealWarning {
		return ""
	}
	return fmt.Sprintf("host: the hypervisor gave %.1f%% of the client machine's CPU time to other machines during the run (CPU steal); schedule lag and latencies include those stalls, which no client removes: run again when the host is quieter, or on a dedicated machine", steal*100)
}

func (s *summarizer) warnings(sum *Summary) []string {
	w := []string{}
	if s.truncation != nil {
		w = append(w, fmt.Sprintf("records file truncated (%v); the summary covers the %d complete records", s.truncation, s.records))
	}
	if sum.Requests.Total == 0 {
		w = append(w, "no steady-state requests: the headline numbers are empty")
	}
	if sum.Client.Limited {
		w = append(w, sum.Client.Reason)
	}
	if w1 := stealWarning(sum.Client.CPUStealFraction); w1 != "" {
		w = append(w, w1)
	}
	w = append(w, failureWarning(sum.Requests)...)
	w = append(w, survivorWarning(sum.Requests, s.head.waitedBound(sum.Latency.TTFT))...)
	w = append(w, mismatchWarning(sum.Requests)...)
	w = append(w, inputWarning(sum.Inputs)...)
	if ww := WarmWarning(sum.PrefixCache); ww != "" {
		w = append(w, ww)
	}
	w = append(w, s.usageRejectedWarning(sum.Requests)...)
	if s.overflow > 0 {
		w = append(w, fmt.Sprintf("classes: more than %d request classes; %d requests of the classes after the first %d are counted together under %q", MaxClasses, s.overflow, MaxClasses, otherClass))
	}
	return w
}

func failureWarning(r Requests) []string {
	var w []string
	if r.Dropped > 0 {
		w = append(w, fmt.Sprintf("dropped: %d of %d requests were never sent (the run was interrupted or a cap was reached first); they are not failures, add no tokens and do not stretch the throughput window",
			r.Dropped, r.Total))
	}
	if r.Failed == 0 {
		return w
	}
	kinds := make([]string, 0, len(r.Failures))
	for k := range r.Failures {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if r.Failures[kinds[i]] != r.Failures[kinds[j]] {
			return r.Failures[kinds[i]] > r.Failures[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, r.Failures[k])
	}
	return append(w, fmt.Sprintf("failures: %d of %d requests failed (%.1f%%): %s; they are excluded from latency percentiles and count against goodput",
		r.Failed, r.Total, 100*float64(r.Failed)/float64(r.Total), strings.Join(parts, ", ")))
}

func mismatchWarning(r Requests) []string {
	if r.TokenCompared == 0 || r.TokenMismatch <= tokenMismatchLimit {
		return nil
	}
	n := int(math.Round(r.TokenMismatch * float64(r.TokenCompared)))
	w := fmt.Sprintf("token counts: %.1f%% of requests (%d of %d) have a client output token count that differs from the server's usage",
		100*r.TokenMismatch, n, r.TokenCompared)
	if r.TokenComparedTokens > 0 {
		// Summaries written before the sizes existed have none to show.
		w += fmt.Sprintf(", by %d tokens in all (%.1f%% of the server's %d)",
			r.TokenMismatchTokens, 100*float64(r.TokenMismatchTokens)/float64(r.TokenComparedTokens), r.TokenComparedTokens)
	}
	switch k := r.TokenAttribution[TokensFromTokenizer]; {
	case len(r.TokenAttribution) == 0:
		return []string{w + "; per-token metrics may be off"}
	case k > 0:
		return []string{w + fmt.Sprintf("; the server's totals are used, but the tokenizer's counts split them among the chunks of %d requests, whose per-token metrics may be off", k)}
	}
	return []string{w + "; the server's counts gave every total and per-chunk split, so per-token metrics are unaffected"}
}

// costOf prices the steady state. With token prices: input and output tokens of every steady
// request at the given prices per million. Otherwise with a GPU-hour price: GPUCount GPUs
// over the steady window. PerMillionOutput and PerMillionTokens divide the whole cost by the
// output tokens and by all tokens; PerMillionInput divides it by the input tokens (gpu_hour
// basis only); PerGoodRequest divides it by the requests that met the SLO.
func costOf(o Options, sum *Summary) *Cost {
	in, out := float64(sum.Requests.InputTokens), float64(sum.Requests.OutputTokens)
	c := &Cost{Currency: o.Currency}
	switch {
	case o.PricePerMInput > 0 || o.PricePerMOutput > 0:
		c.Basis = "token_price"
		c.Total = in/1e6*o.PricePerMInput + out/1e6*o.PricePerMOutput
	case o.GPUHourCost > 0:
		c.Basis = "gpu_hour"
		gpus := o.GPUCount
		if gpus <= 0 {
			gpus = 1
		}
		c.Total = o.GPUHourCost * float64(gpus) * sum.Throughput.WindowS / 3600
		if in > 0 {
			c.PerMillionInput = c.Total / in * 1e6
		}
	default:
		return nil
	}
	fillCostRates(c, sum)
	return c
}

func fillCostRates(c *Cost, sum *Summary) {
	in, out := float64(sum.Requests.InputTokens), float64(sum.Requests.OutputTokens)
	if sum.Requests.Total > 0 {
		c.PerRequest = c.Total / float64(sum.Requests.Total)
	}
	if out > 0 {
		c.PerMillionOutput = c.Total / out * 1e6
	}
	if in+out > 0 {
		c.PerMillionTokens = c.Total / (in + out) * 1e6
	}
	if sum.Goodput.Met > 0 {
		c.PerGoodRequest = c.Total / float64(sum.Goodput.Met)
	}
}

func seconds(ns int64) float64 { return float64(ns) / float64(time.Second) }
