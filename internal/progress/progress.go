// Package progress draws the live view of a run: on a terminal a panel redrawn in place at
// most four times a second, otherwise a plain line every few seconds (CI logs). It only reads
// counters and the finished requests it is shown; it never affects the run. Its rolling
// figures (the last WindowSlots seconds) are for watching a run, not results: those come from
// the records. It is internal: the CLI's display, not an API.
package progress

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Snapshot is the live state of a run for the progress display.
type Snapshot struct {
	Sent, InFlight, Done, Failed, OutputTokens int64
}

// Server is the endpoint's own view, from its Prometheus /metrics (-1: not exported).
type Server struct {
	Running, Waiting float64
	KVUsage          float64 // 0..1
}

// Request is one finished request as the display sees it.
type Request struct {
	// Failure is the failure kind, "" for a success.
	Failure string
	// TTFT is the time to first token (negative: none).
	TTFT time.Duration
	// Lag is the schedule lag, dispatch minus intended time (negative: never dispatched).
	Lag time.Duration
	// OutputTokens are the request's output tokens.
	OutputTokens int
	// At is when the request counts on a simulation's virtual clock (Options.Virtual): its
	// rolling figures go to that second. Unused otherwise (a request counts when observed).
	At time.Duration
	// ITL, when set, calls add for each chunk gap with the number of tokens it stands for
	// (per-token ITL: a chunk of k tokens is its gap once and k-1 zero gaps).
	ITL func(add func(gap time.Duration, tokens int))
}

// Options configure a Display.
type Options struct {
	W io.Writer
	// Terminal redraws a panel in place; otherwise a line is printed every Every.
	Terminal bool
	// Total is the number of requests expected (0: unknown); Expected the run's nominal
	// length in wall time (0: unknown).
	Total    int
	Expected time.Duration
	Snap     func() Snapshot
	// Server, when set, returns the latest scrape (ok false before the first).
	Server func() (Server, bool)
	// LagLimit is the schedule-lag P99 above which the client is shown as limited.
	LagLimit time.Duration
	// Width bounds a terminal panel's lines (default 100), so a line never wraps and breaks
	// the redraw; plain lines are whole.
	Width int
	// Every is the refresh period: on a terminal at least 250 ms (at most four frames a
	// second; default 250 ms), otherwise default 5 s.
	Every time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Virtual, when set, makes this the display of a simulation on a virtual clock (llmbench
	// simulate): it returns how far that clock has run. The panel then shows the virtual time
	// against Expected (also virtual), the requests done, the rate at which they are simulated
	// (per second of Now's wall time) and the rolling figures of the requests that count
	// (Request.At) in the last WindowSlots seconds of virtual time; there is no sending,
	// in-flight count or client to show, and Snap's Sent and InFlight are not read.
	Virtual func() time.Duration

	// Note, when set, returns a line the display adds under its figures ("" for none): the
	// saturation watch's state (issue 39).
	Note func() string
}

// Display draws the live view. Observe, Stop and the drawing goroutine may run concurrently.
type Display struct {
	o     Options
	start time.Time

	mu       sync.Mutex
	win      *window
	failures map[string]int
	// cancelled counts records the client cancelled on purpose (CancelledKind): they are
	// neither failures nor successes, shown apart.
	cancelled int
	lines     int // lines of the last terminal frame
	stop      chan struct{}
	done      chan struct{}
	stopOnce  sync.Once
}

// MinFrame is the shortest refresh period on a terminal: at most four frames a second.
const MinFrame = 250 * time.Millisecond

// Start begins drawing; call Stop when the run ends.
func Start(o Options) *Display {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Width <= 0 {
		o.Width = 100
	}
	switch {
	case o.Terminal && o.Every < MinFrame:
		o.Every = MinFrame
	case !o.Terminal && o.Every <= 0:
		o.Every = 5 * time.Second
	}
	if o.LagLimit <= 0 {
		o.LagLimit = 5 * time.Millisecond
	}
	p := &Display{o: o, win: newWindow(), failures: map[string]int{}, stop: make(chan struct{}), done: make(chan struct{})}
	p.start = o.Now()
	go func() {
		defer close(p.done)
		t := time.NewTicker(o.Every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.draw(false)
			}
		}
	}()
	return p
}

// Observe adds one finished request to the rolling window.
func (p *Display) Observe(r Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sec := p.second()
	if p.o.Virtual != nil {
		sec = int64(r.At / time.Second)
	}
	s := p.win.at(sec)
	s.n++
	s.tokens += int64(r.OutputTokens)
	if r.Lag >= 0 {
		s.lag.add(micros(r.Lag), 1)
	}
	if r.Failure == CancelledKind {
		p.cancelled++ // neither success nor failure
		return
	}
	if r.Failure != "" {
		p.failures[r.Failure]++
		return
	}
	if r.TTFT >= 0 {
		s.ttft.add(micros(r.TTFT), 1)
	}
	if r.ITL != nil {
		r.ITL(func(gap time.Duration, tokens int) {
			s.itl.add(micros(gap), 1)
			if tokens > 1 {
				s.itl.add(0, uint32(tokens-1))
			}
		})
	}
}

func (p *Display) second() int64 { return int64(p.elapsed() / time.Second) }

// elapsed is the run's clock: the wall time since Start, or the simulation's virtual time.
func (p *Display) elapsed() time.Duration {
	if p.o.Virtual != nil {
		return p.o.Virtual()
	}
	return p.o.Now().Sub(p.start)
}

// Stop draws the final state and ends the display.
func (p *Display) Stop() {
	p.stopOnce.Do(func() {
		close(p.stop)
		<-p.done
		p.draw(true)
	})
}

// frame renders the panel's lines (terminal) or its one line (otherwise).
func (p *Display) frame() []string {
	if p.o.Virtual != nil {
		return p.simFrame()
	}
	now := p.o.Now()
	el := now.Sub(p.start)
	s := p.o.Snap()
	f := p.win.figures(int64(el / time.Second))
	span := math.Min(float64(WindowSlots), math.Max(el.Seconds(), 1))

	clock := fmtDur(el)
	if p.o.Expected > 0 {
		clock += " / " + fmtDur(p.o.Expected)
	}
	done := strconv.FormatInt(s.Done, 10)
	if p.o.Total > 0 {
		done += "/" + strconv.Itoa(p.o.Total)
	}
	counts := fmt.Sprintf("sent %d · in flight %d · completed %d · failed %d", s.Sent, s.InFlight, s.Done-s.Failed-int64(p.cancelled), s.Failed)
	if len(p.failures) > 0 {
		counts += " (" + p.failureText() + ")"
	}
	if p.cancelled > 0 {
		counts += " · cancelled " + strconv.Itoa(p.cancelled)
	}
	lat := fmt.Sprintf("TTFT p50 %s p99 %s ms · ITL p50 %s p99 %s ms · %s output tok/s",
		fmtMs(f.ttftP50), fmtMs(f.ttftP99), fmtMs(f.itlP50), fmtMs(f.itlP99), fmtRate(float64(f.tokens)/span))
	verdict := "client healthy"
	if f.lagP99 > float64(p.o.LagLimit)/float64(time.Millisecond) {
		verdict = "client LIMITED"
	}
	client := fmt.Sprintf("%s: schedule lag p99 %s ms (limit %s ms)", verdict, fmtMs(f.lagP99), fmtMs(float64(p.o.LagLimit)/float64(time.Millisecond)))
	server := ""
	if p.o.Server != nil {
		if sv, ok := p.o.Server(); ok {
			server = "server: " + gauge(sv.Running, " running") + " · " + gauge(sv.Waiting, " waiting") + " · KV cache " + kv(sv.KVUsage)
		} else {
			server = "server: no /metrics sample yet"
		}
	}
	note := ""
	if p.o.Note != nil {
		note = p.o.Note()
	}
	if !p.o.Terminal {
		line := clock + " · " + done + " done · " + counts + " · last 10 s: " + lat + " · " + client
		if server != "" {
			line += " · " + server
		}
		if note != "" {
			line += " · " + note
		}
		return []string{line}
	}
	lines := []string{
		"llmbench · " + clock + " · " + bar(s.Done, p.o.Total) + " " + done + " done",
		counts,
		"last 10 s: " + lat,
		client,
	}
	if server != "" {
		lines = append(lines, server)
	}
	if note != "" {
		lines = append(lines, note)
	}
	return lines
}

// simFrame renders the panel or line of a simulation: virtual time, requests done, the rate of
// simulation in wall time, and the rolling figures over the last seconds of virtual time.
func (p *Display) simFrame() []string {
	wall := p.o.Now().Sub(p.start)
	el := p.o.Virtual()
	s := p.o.Snap()
	f := p.win.figures(int64(el / time.Second))
	span := math.Min(float64(WindowSlots), math.Max(el.Seconds(), 1))

	clock := "virtual " + fmtDur(el)
	if p.o.Expected > 0 {
		clock += " / " + fmtDur(p.o.Expected)
	}
	done := strconv.FormatInt(s.Done, 10)
	if p.o.Total > 0 {
		done += "/" + strconv.Itoa(p.o.Total)
	}
	rate := "-"
	if wall > 0 {
		rate = fmtRate(float64(s.Done) / wall.Seconds())
	}
	speed := rate + " requests/s simulated (wall " + fmtDur(wall) + ")"
	counts := fmt.Sprintf("completed %d · failed %d", s.Done-s.Failed-int64(p.cancelled), s.Failed)
	if len(p.failures) > 0 {
		counts += " (" + p.failureText() + ")"
	}
	if p.cancelled > 0 {
		counts += " · cancelled " + strconv.Itoa(p.cancelled)
	}
	lat := fmt.Sprintf("TTFT p50 %s p99 %s ms · ITL p50 %s p99 %s ms · %s output tok/s",
		fmtMs(f.ttftP50), fmtMs(f.ttftP99), fmtMs(f.itlP50), fmtMs(f.itlP99), fmtRate(float64(f.tokens)/span))
	if !p.o.Terminal {
		return []string{clock + " · " + done + " done · " + speed + " · " + counts + " · arrivals of the last 10 s: " + lat}
	}
	return []string{
		"llmbench simulate · " + clock + " · " + bar(s.Done, p.o.Total) + " " + done + " done",
		speed + " · " + counts,
		"arrivals of the last 10 s: " + lat,
	}
}

func (p *Display) draw(final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lines := p.frame()
	var b strings.Builder
	if p.o.Terminal && p.lines > 0 {
		fmt.Fprintf(&b, "\033[%dA", p.lines) // back to the top of the last frame
	}
	for _, l := range lines {
		if p.o.Terminal {
			l = clipRunes(l, p.o.Width) // a wrapped line would break the redraw
			b.WriteString("\r\033[K")
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if p.o.Terminal {
		b.WriteString("\033[J") // clear what a longer last frame left below
		p.lines = len(lines)
	}
	_, _ = io.WriteString(p.o.W, b.String())
}

// CancelledKind is metrics.KindCancelled (this package may not import metrics; runner's
// TestProgressKnowsCancelled checks they are the same): a record the client cancelled on
// purpose.
const CancelledKind = "cancelled"

func (p *Display) failureText() string {
	kinds := make([]string, 0, len(p.failures))
	for k := range p.failures {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if p.failures[kinds[i]] != p.failures[kinds[j]] {
			return p.failures[kinds[i]] > p.failures[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = k + " " + strconv.Itoa(p.failures[k])
	}
	return strings.Join(parts, ", ")
}

func bar(done int64, total int) string {
	const width = 20
	if total <= 0 {
		return ""
	}
	n := int(math.Min(1, float64(done)/float64(total)) * width)
	s := "[" + strings.Repeat("=", n)
	if n < width {
		s += ">" + strings.Repeat(" ", width-n-1)
	}
	return s + "]"
}

func fmtDur(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s" }

// fmtMs prints a latency in ms with three significant digits; "-" without samples.
func fmtMs(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v == 0:
		return "0"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

func fmtRate(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }

func gauge(v float64, label string) string {
	if v < 0 {
		return "?" + label
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + label
}

func kv(v float64) string {
	if v < 0 {
		return "?"
	}
	return strconv.FormatFloat(v*100, 'f', 1, 64) + "%"
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
