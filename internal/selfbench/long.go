package selfbench

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/llmbench/llmbench/internal/hoststat"
	"github.com/llmbench/llmbench/loadgen"
	llmmetrics "github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// LongTargets are issue 18's figures for 20,000 streams at 10 tokens/s on 2 cores.
var LongTargets = map[string]float64{
	"lag_p99_ms":           1,
	"arrival_error_p99_ms": 1,
	"rss_per_stream_kb":    40,
}

// LongOptions shape the long-streams scenario. Zero values take the defaults in brackets.
type LongOptions struct {
	// InFlight lists the numbers of concurrent streams measured, one point each
	// [1000, 5000, 20000].
	InFlight []int
	// Gap is the time between a stream's tokens [100ms: 10 tokens/s].
	Gap time.Duration
	// Window is how long all the streams of a point are open at once [5s]; the figures
	// count the tokens sent then.
	Window time.Duration
	// RampRate is how many new streams start per second before the window [2000].
	RampRate float64
	// Runs is how often each point is measured; its figures are the medians [1].
	Runs int
	// HTTP2 and SourceAddrs configure the client's connections (loadgen.Target). The server
	// holds no goroutine or buffer per stream over either protocol (longServer).
	HTTP2       bool
	SourceAddrs []netip.Addr
	// RSS reads the process's resident set size in bytes (0: unknown); FDLimit is the limit
	// on open files (0: unknown). The caller supplies both.
	RSS     func() uint64
	FDLimit uint64
	// Log receives one line per point (nil: none).
	Log io.Writer
}

func (o *LongOptions) defaults() {
	if len(o.InFlight) == 0 {
		o.InFlight = []int{1000, 5000, 20000}
	}
	if o.Gap <= 0 {
		o.Gap = 100 * time.Millisecond
	}
	if o.Window <= 0 {
		o.Window = 5 * time.Second
	}
	if o.RampRate <= 0 {
		o.RampRate = 2000
	}
	if o.Runs <= 0 {
		o.Runs = 1
	}
	if o.RSS == nil {
		o.RSS = func() uint64 { return 0 }
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// LongPoint is the figures of one number of streams in flight.
type LongPoint struct {
	Streams int `json:"streams"`
	// Skipped says why the point was not run (too few file descriptors); empty otherwise.
	Skipped   string         `json:"skipped,omitempty"`
	Succeeded int            `json:"succeeded"`
	Failed    int            `json:"failed"`
	Failures  map[string]int `json:"failures,omitempty"`
	// Connections the client dialed (HTTP/2 multiplexes the streams over few).
	Connections int `json:"connections"`
	// TokensPerS is the tokens per second all streams together carried in the window.
	TokensPerS float64 `json:"tokens_per_s"`
	// LagP99Ms is the schedule lag P99 (dispatch minus intended time) over every stream.
	LagP99Ms float64 `json:"lag_p99_ms"`
	// ArrivalErrorP50Ms / P99Ms / MaxMs: client arrival minus server send time of the
	// tokens of the sampled streams (up to 1,000) sent while every stream was open.
	ArrivalErrorP50Ms float64 `json:"arrival_error_p50_ms"`
	ArrivalErrorP99Ms float64 `json:"arrival_error_p99_ms"`
	ArrivalErrorMaxMs float64 `json:"arrival_error_max_ms"`
	// PeakOpen is the most streams the server had open at once (Streams when the client
	// kept up). RSSPerStreamKB is the process's resident memory when they were open minus
	// before the point, per open stream (the built-in server included: it runs in this
	// process); GoPerStreamKB the Go heap (live at the last collection) and goroutine stacks
	// the same way. 0: unknown.
	PeakOpen          int     `json:"peak_open"`
	RSSPerStreamKB    float64 `json:"rss_per_stream_kb"`
	RSSMB             float64 `json:"rss_mb"`
	GoPerStreamKB     float64 `json:"go_heap_stacks_per_stream_kb"`
	ClientCPUFraction float64 `json:"client_cpu_fraction"`
	// WakeFloorP99Ms is how late the real clock's sleeps woke while the process was idle,
	// P99 of wakeFloorSleeps one-millisecond sleeps just before the point: the machine's own
	// part of the lag figures, which no client removes (a virtual machine's CPUs can wake
	// milliseconds late when the host is busy). CPUStealFraction is the share of the CPUs'
	// time the hypervisor gave to others during the point (-1: unknown); both vary from
	// minute to minute with the host's load.
	WakeFloorP99Ms   float64 `json:"wake_floor_p99_ms"`
	CPUStealFraction float64 `json:"cpu_steal_fraction"`
	// Runs holds each run's figures when the point was measured more than once (Options.Runs);
	// the point's figures are then their medians, and Succeeded, Failed and Failures the sums.
	Runs []LongPoint `json:"runs,omitempty"`
}

// LongFigures are the long-streams scenario's results.
type LongFigures struct {
	Points   []LongPoint `json:"points"`
	GapMs    float64     `json:"gap_ms"`
	WindowS  float64     `json:"window_s"`
	RampRate float64     `json:"ramp_rate"`
	Runs     int         `json:"runs"`
	HTTP2    bool        `json:"http2"`
	ElapsedS float64     `json:"elapsed_s"`
	// Targets apply to the 20,000-stream point on 2 cores.
	Targets map[string]float64 `json:"targets"`
}

// maxSampled bounds the streams whose every token time the server books.
const maxSampled = 1000

// RunLong measures each number of streams in flight in turn.
func RunLong(ctx context.Context, o LongOptions) (*LongFigures, error) {
	o.defaults()
	t0 := time.Now()
	f := &LongFigures{GapMs: ms(o.Gap), WindowS: o.Window.Seconds(), RampRate: o.RampRate, Runs: o.Runs, HTTP2: o.HTTP2, Targets: LongTargets}
	for _, n := range o.InFlight {
		if n < 1 {
			return nil, fmt.Errorf("in-flight streams %d: must be > 0", n)
		}
		var runs []LongPoint
		for run := range o.Runs {
			p, err := longPoint(ctx, o, n)
			if err != nil {
				return nil, err
			}
			if p.Skipped != "" {
				fmt.Fprintf(o.Log, "%d streams: skipped: %s\n", n, p.Skipped)
				runs = []LongPoint{p}
				break
			}
			label := ""
			if o.Runs > 1 {
				label = fmt.Sprintf(" (run %d/%d)", run+1, o.Runs)
			}
			fmt.Fprintf(o.Log, "%d streams%s: %d failed, %d connections, %.0f tok/s, lag P99 %.3f ms, arrival error P50 %.3f P99 %.3f ms, RSS %.0f MB (%.1f KB/stream, Go %.1f KB/stream), CPU %.2f, wake floor P99 %.3f ms, steal %s\n",
				n, label, p.Failed, p.Connections, p.TokensPerS, p.LagP99Ms, p.ArrivalErrorP50Ms, p.ArrivalErrorP99Ms, p.RSSMB, p.RSSPerStreamKB, p.GoPerStreamKB, p.ClientCPUFraction,
				p.WakeFloorP99Ms, Percent(p.CPUStealFraction))
			runs = append(runs, p)
		}
		f.Points = append(f.Points, medianPoint(runs))
	}
	f.ElapsedS = time.Since(t0).Seconds()
	return f, nil
}

// Percent formats a fraction as a percentage, "unknown" when negative.
func Percent(f float64) string {
	if f < 0 {
		return "unknown"
	}
	return strconv.FormatFloat(100*f, 'f', 1, 64) + "%"
}

// medianPoint is one point's figures over its runs: the medians, with the failures summed
// (a failure in any run is not hidden by a median) and every run kept.
func medianPoint(runs []LongPoint) LongPoint {
	if len(runs) == 1 {
		return runs[0]
	}
	med := func(field func(*LongPoint) float64) float64 {
		v := make([]float64, len(runs))
		for i := range runs {
			v[i] = field(&runs[i])
		}
		return median(v)
	}
	p := LongPoint{Streams: runs[0].Streams, Runs: runs,
		Connections:       int(med(func(p *LongPoint) float64 { return float64(p.Connections) })),
		TokensPerS:        med(func(p *LongPoint) float64 { return p.TokensPerS }),
		LagP99Ms:          med(func(p *LongPoint) float64 { return p.LagP99Ms }),
		ArrivalErrorP50Ms: med(func(p *LongPoint) float64 { return p.ArrivalErrorP50Ms }),
		ArrivalErrorP99Ms: med(func(p *LongPoint) float64 { return p.ArrivalErrorP99Ms }),
		ArrivalErrorMaxMs: med(func(p *LongPoint) float64 { return p.ArrivalErrorMaxMs }),
		PeakOpen:          int(med(func(p *LongPoint) float64 { return float64(p.PeakOpen) })),
		RSSPerStreamKB:    med(func(p *LongPoint) float64 { return p.RSSPerStreamKB }),
		RSSMB:             med(func(p *LongPoint) float64 { return p.RSSMB }),
		GoPerStreamKB:     med(func(p *LongPoint) float64 { return p.GoPerStreamKB }),
		ClientCPUFraction: med(func(p *LongPoint) float64 { return p.ClientCPUFraction }),
		WakeFloorP99Ms:    med(func(p *LongPoint) float64 { return p.WakeFloorP99Ms }),
		CPUStealFraction:  med(func(p *LongPoint) float64 { return p.CPUStealFraction }),
	}
	for _, r := range runs {
		p.Succeeded += r.Succeeded
		p.Failed += r.Failed
		for k, v := range r.Failures {
			if p.Failures == nil {
				p.Failures = map[string]int{}
			}
			p.Failures[k] += v
		}
	}
	return p
}

// wakeFloorSleeps is the number of idle sleeps behind LongPoint.WakeFloorP99Ms.
const wakeFloorSleeps = 1000

// goMemory is the Go heap live at the last collection plus the goroutine stacks.
func goMemory() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	var v uint64
	for _, x := range s {
		if x.Value.Kind() == metrics.KindUint64 {
			v += x.Value.Uint64()
		}
	}
	return v
}

// longPoint measures n long streams held open at once against the built-in server: the
// client's wake floor, the memory per open stream, the dispatch lag and, over o.Window once
// every stream is open, the error of the client's chunk arrival times against the server's
// send times.
func longPoint(ctx context.Context, o LongOptions, n int) (LongPoint, error) {
	p := LongPoint{Streams: n}
	if !o.HTTP2 && o.FDLimit > 0 && uint64(2*n+64) > o.FDLimit {
		p.Skipped = fmt.Sprintf("%d HTTP/1.1 streams need about %d file descriptors (the client's and the built-in server's ends, in one process), the limit is %d; measure it with --http2", n, 2*n+64, o.FDLimit)
		return p, nil
	}
	sample := max(1, (n+maxSampled-1)/maxSampled)
	srv, err := startLongServer(o.HTTP2, sample)
	if err != nil {
		return p, err
	}
	defer srv.close()
	reqs, tokens := longRequests(o, n)
	if p.WakeFloorP99Ms, err = wakeFloorP99(ctx); err != nil {
		return p, err
	}
	runtime.GC()
	debug.FreeOSMemory()
	rss0, go0 := o.RSS(), goMemory()
	steal := hoststat.Since()
	probe := startMemProbe(srv, o.RSS, n)
	col := &longCollector{p: &p, srv: srv, lags: make([]float64, 0, n), got: map[string][]int64{}}
	p.Failures = map[string]int{}
	tg := loadgen.Target{URL: srv.url, Model: "bench", Backend: "openai", Stream: true, HTTP2: o.HTTP2, SourceAddrs: o.SourceAddrs,
		Headers:  map[string]string{tokensHeader: strconv.Itoa(tokens), gapHeader: o.Gap.String()},
		Timeouts: loadgen.Timeouts{Connect: 30 * time.Second, Headers: 30 * time.Second, Idle: 30 * time.Second}}
	res, err := loadgen.Run(ctx, reqs, loadgen.Options{Target: tg}, col.record)
	p.CPUStealFraction = steal()
	probe.stop()
	if err != nil {
		return p, err
	}
	if res.Interrupted {
		return p, ctx.Err()
	}
	p.Connections = res.Connections
	p.ClientCPUFraction = res.ClientCPUFraction
	probe.perStream(&p, rss0, go0)
	slices.Sort(col.lags)
	p.LagP99Ms = quantile(col.lags, 0.99)
	if err := arrivalErrors(&p, o, srv, res.Start, col.got, sample); err != nil {
		return p, err
	}
	if len(p.Failures) == 0 {
		p.Failures = nil
	}
	return p, nil
}

// longRequests is the trace of n streams arriving evenly over the ramp (n at o.RampRate per
// second), each long enough to stay open through the ramp and the measured window at one token
// per o.Gap; tokens is the length of each.
func longRequests(o LongOptions, n int) (reqs []traces.Request, tokens int) {
	ramp := time.Duration(float64(n) / o.RampRate * float64(time.Second))
	tokens = int((ramp+o.Window)/o.Gap) + 2
	reqs = make([]traces.Request, n)
	for i := range reqs {
		reqs[i] = traces.Request{ID: "s" + strconv.Itoa(i), Arrival: ramp * time.Duration(i) / time.Duration(n), InputTokens: 1, OutputTokens: tokens, Prompt: " hi"}
	}
	return reqs, tokens
}

// wakeFloorP99 is the P99 lateness (ms) of wakeFloorSleeps idle 1 ms sleeps of the client's
// clock, the floor under any lag the run measures.
func wakeFloorP99(ctx context.Context) (float64, error) {
	late, err := loadgen.WakeLateness(ctx, wakeFloorSleeps, time.Millisecond)
	if err != nil {
		return 0, err
	}
	lateMs := make([]float64, len(late))
	for i, d := range late {
		lateMs[i] = ms(d)
	}
	slices.Sort(lateMs)
	return quantile(lateMs, 0.99), nil
}

// memProbe reads the process's memory when every stream is open (or, if they never all are,
// at the most that were), polling the server's count of open streams: this is a benchmark,
// not a test.
type memProbe struct {
	rss, gomem uint64 // read at openAt streams open (0: never read)
	openAt     int64
	done, quit chan struct{}
}

// startMemProbe starts polling srv until n streams are open or stop is called.
func startMemProbe(srv *longServer, rss func() uint64, n int) *memProbe {
	m := &memProbe{done: make(chan struct{}), quit: make(chan struct{})}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
			case <-m.quit:
				return
			}
			if open := srv.open.Load(); open > m.openAt {
				m.openAt = open
				m.rss, m.gomem = rss(), goMemory()
				if open >= int64(n) {
					return
				}
			}
		}
	}()
	return m
}

// stop ends the polling; the probe's figures may be read after it.
func (m *memProbe) stop() {
	close(m.quit)
	<-m.done
}

// perStream sets p's peak of open streams and its memory figures: the resident set, and the
// resident and Go memory per open stream above the readings before the run (rss0, go0).
func (m *memProbe) perStream(p *LongPoint, rss0, go0 uint64) {
	p.PeakOpen = int(m.openAt)
	if m.rss > 0 && m.openAt > 0 {
		p.RSSMB = float64(m.rss) / 1e6
		p.RSSPerStreamKB = (float64(m.rss) - float64(rss0)) / float64(m.openAt) / 1e3
	}
	if m.gomem > 0 && m.openAt > 0 {
		p.GoPerStreamKB = (float64(m.gomem) - float64(go0)) / float64(m.openAt) / 1e3
	}
}

// longCollector is the run's sink: it counts the outcomes into p, keeps every request's
// dispatch lag (ms) and the chunk times of the streams the server samples.
type longCollector struct {
	mu   sync.Mutex
	p    *LongPoint
	srv  *longServer
	lags []float64
	got  map[string][]int64 // sampled stream → its chunks' times (ns from the run's start)
}

func (c *longCollector) record(r *llmmetrics.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lags = append(c.lags, ms(time.Duration(r.Dispatched-r.Intended)))
	if !r.OK() {
		c.p.Failed++
		c.p.Failures[string(r.Failure)]++
		return
	}
	c.p.Succeeded++
	if c.srv.sampled(r.ID) {
		ts := make([]int64, len(r.Chunks))
		for i, ch := range r.Chunks {
			ts[i] = ch.T
		}
		c.got[r.ID] = ts
	}
}

// arrivalErrors sets p's arrival error quantiles and token rate over the window of o.Window
// from the moment every stream was open: each sampled token's client arrival time (got, on
// the run's clock from start) against the time the server sent it.
func arrivalErrors(p *LongPoint, o LongOptions, srv *longServer, start time.Time, got map[string][]int64, sample int) error {
	booked := srv.booked.take()
	offset := start.Sub(srv.epoch).Nanoseconds()
	allOpen := srv.last1.Load()
	end := allOpen + o.Window.Nanoseconds()
	var errs []float64
	inWindow := 0
	for id, client := range got {
		sent := booked[id]
		if len(sent) != len(client) {
			return fmt.Errorf("long streams: stream %s: the server sent %d tokens, the client saw %d chunks", id, len(sent), len(client))
		}
		for i := range client {
			if sent[i] >= allOpen && sent[i] < end {
				errs = append(errs, ms(time.Duration(client[i]+offset-sent[i])))
				inWindow++
			}
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		p.ArrivalErrorP50Ms, p.ArrivalErrorP99Ms, p.ArrivalErrorMaxMs = quantile(errs, 0.5), quantile(errs, 0.99), quantile(errs, 1)
		p.TokensPerS = float64(inWindow) * float64(sample) / o.Window.Seconds()
	}
	return nil
}
