package progress

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// clock is a settable fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func ok(ttft time.Duration, gaps ...time.Duration) Request {
	return Request{TTFT: ttft, Lag: 200 * time.Microsecond, OutputTokens: len(gaps) + 1,
		ITL: func(add func(time.Duration, int)) {
			for _, g := range gaps {
				add(g, 1)
			}
		}}
}

func TestPlainLineFigures(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	var b strings.Builder
	snap := Snapshot{Sent: 12, InFlight: 2, Done: 10, Failed: 2, OutputTokens: 400}
	d := Start(Options{W: &b, Total: 20, Expected: 30 * time.Second, Snap: func() Snapshot { return snap },
		Every: time.Hour, Now: c.now})
	c.advance(4 * time.Second)
	for i := 0; i < 8; i++ {
		d.Observe(ok(20*time.Millisecond, 7*time.Millisecond, 7*time.Millisecond, 30*time.Millisecond))
	}
	d.Observe(Request{Failure: "http_5xx", TTFT: -1, Lag: time.Millisecond})
	d.Observe(Request{Failure: "timeout_idle", TTFT: -1, Lag: time.Millisecond})
	d.Stop()
	d.Stop() // a second Stop draws nothing more
	got := b.String()
	if strings.Count(got, "\n") != 1 || strings.Contains(got, "\033") {
		t.Fatalf("want one plain line, got %q", got)
	}
	for _, want := range []string{"4.0 s / 30.0 s", "10/20 done", "sent 12 · in flight 2 · completed 8 · failed 2 (http_5xx 1, timeout_idle 1)",
		"8 output tok/s", "client healthy: schedule lag p99 ", "(limit 5.00 ms)"} {
		if !strings.Contains(got, want) {
			t.Errorf("line lacks %q:\n%s", want, got)
		}
	}
	// The rolling percentiles, within the window histogram's 4% bins.
	m := regexp.MustCompile(`TTFT p50 (\S+) p99 (\S+) ms · ITL p50 (\S+) p99 (\S+) ms`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no latency figures in %q", got)
	}
	for i, want := range []float64{20, 20, 7, 30} {
		v, err := strconv.ParseFloat(m[i+1], 64)
		if err != nil || math.Abs(v-want)/want > 0.04 {
			t.Errorf("figure %d = %s, want about %v", i+1, m[i+1], want)
		}
	}
}

func TestWindowForgetsOldSeconds(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	d := Start(Options{W: &strings.Builder{}, Snap: func() Snapshot { return Snapshot{} }, Every: time.Hour, Now: c.now})
	defer d.Stop()
	d.Observe(ok(900 * time.Millisecond))
	c.advance(5 * time.Second)
	d.Observe(ok(10 * time.Millisecond))
	f := d.win.figures(5)
	if f.requests != 2 || math.Abs(f.ttftP99-900)/900 > 0.1 {
		t.Fatalf("at 5 s: %+v", f)
	}
	f = d.win.figures(10) // the first second has left the window
	if f.requests != 1 || math.Abs(f.ttftP99-10)/10 > 0.1 {
		t.Fatalf("at 10 s: %+v", f)
	}
	if f := d.win.figures(30); f.requests != 0 || !math.IsNaN(f.ttftP50) {
		t.Fatalf("at 30 s: %+v", f)
	}
	if fmtMs(math.NaN()) != "-" {
		t.Error("no samples should read -")
	}
}

func TestPanelRedrawsInPlace(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	var b strings.Builder
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return b.Write(p) })
	d := Start(Options{W: w, Terminal: true, Total: 5, Snap: func() Snapshot { return Snapshot{Done: 1, Sent: 2, InFlight: 1} },
		Server: func() (Server, bool) { return Server{Running: 7, Waiting: 3, KVUsage: 0.25}, true },
		Width:  60, Every: time.Millisecond, Now: c.now})
	if d.o.Every != MinFrame {
		t.Errorf("terminal refresh every %v, want at most four frames a second (%v)", d.o.Every, MinFrame)
	}
	lines := d.frame()
	if len(lines) != 5 || !strings.HasPrefix(lines[4], "server: 7 running · 3 waiting · KV cache 25.0%") {
		t.Fatalf("panel %q", lines)
	}
	d.draw(false)
	d.Stop()
	mu.Lock()
	got := b.String()
	mu.Unlock()
	frames := strings.Split(got, "\033[5A")
	if len(frames) < 2 {
		t.Fatalf("the second frame does not move back over the first: %q", got)
	}
	for _, l := range strings.Split(got, "\n") {
		l = strings.TrimPrefix(strings.TrimPrefix(l, "\033[J"), "\033[5A")
		l = strings.TrimPrefix(l, "\r\033[K")
		if n := utf8.RuneCountInString(l); n > 60 {
			t.Errorf("line of %d columns (> 60): %q", n, l)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestLogHistQuantiles(t *testing.T) {
	var h logHist
	for i := 1; i <= 1000; i++ {
		h.add(int64(i)*1000, 1) // 1..1000 ms
	}
	for q, want := range map[float64]float64{0.5: 500, 0.99: 990} {
		if got := quantileMs(&h, q); math.Abs(got-want)/want > 0.04 {
			t.Errorf("q%v = %v ms, want about %v", q, got, want)
		}
	}
}

// BenchmarkObserve is the display's cost per finished request of 200 chunks.
func BenchmarkObserve(b *testing.B) {
	c := &clock{t: time.Unix(0, 0)}
	d := Start(Options{W: &strings.Builder{}, Snap: func() Snapshot { return Snapshot{} }, Every: time.Hour, Now: c.now})
	defer d.Stop()
	gaps := make([]time.Duration, 200)
	for i := range gaps {
		gaps[i] = time.Duration(5+i%20) * time.Millisecond
	}
	r := ok(30*time.Millisecond, gaps...)
	b.ReportAllocs()
	for b.Loop() {
		d.Observe(r)
	}
}

// TestSimulationFrame: with a virtual clock the display shows the virtual time against the
// nominal length, the requests done, the rate of simulation in wall time and the rolling
// figures keyed by virtual seconds; nothing of sending or of a client.
func TestSimulationFrame(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	var virtual time.Duration
	var b strings.Builder
	snap := Snapshot{Done: 50, Failed: 1}
	d := Start(Options{W: &b, Total: 96, Expected: 20 * time.Second, Snap: func() Snapshot { return snap },
		Every: time.Hour, Now: c.now, Virtual: func() time.Duration { return virtual }})
	at := func(r Request, t time.Duration) Request { r.At = t; return r }
	virtual = 3 * time.Second
	d.Observe(at(ok(900*time.Millisecond, 9*time.Millisecond), 3*time.Second))
	virtual = 15 * time.Second // the first observation has left the 10 s window
	for i := 0; i < 4; i++ {
		d.Observe(at(ok(20*time.Millisecond, 7*time.Millisecond, 7*time.Millisecond), 15*time.Second))
	}
	// Out of order: a request of second 5 (same slot as 15, outside the window) is counted but
	// leaves second 15's figures alone.
	d.Observe(at(ok(5*time.Second, 9*time.Millisecond), 5*time.Second))
	d.Observe(at(Request{Failure: "early_eos", TTFT: -1, Lag: -1}, 14*time.Second))
	c.advance(2 * time.Second)
	d.Stop()
	got := b.String()
	for _, want := range []string{"virtual 15.0 s / 20.0 s", "50/96 done", "25 requests/s simulated (wall 2.0 s)",
		"completed 49 · failed 1 (early_eos 1)", "arrivals of the last 10 s: TTFT p50 ", "· 1 output tok/s"} {
		if !strings.Contains(got, want) {
			t.Errorf("line lacks %q:\n%s", want, got)
		}
	}
	for _, absent := range []string{"sent", "in flight", "client", "schedule lag"} {
		if strings.Contains(got, absent) {
			t.Errorf("a simulation's line shows %q:\n%s", absent, got)
		}
	}
	if m := regexp.MustCompile(`TTFT p50 (\S+) p99 (\S+) ms`).FindStringSubmatch(got); m == nil || !strings.HasPrefix(m[1], "20") || !strings.HasPrefix(m[2], "20") {
		t.Errorf("the TTFT window is not the arrivals of the last 10 s of virtual time: %q", got)
	}
	panel := Start(Options{W: &strings.Builder{}, Terminal: true, Total: 96, Snap: func() Snapshot { return snap },
		Every: time.Hour, Now: c.now, Virtual: func() time.Duration { return virtual }})
	defer panel.Stop()
	lines := panel.frame()
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "llmbench simulate · virtual 15.0 s · [") || !strings.Contains(lines[0], "50/96 done") {
		t.Errorf("panel %q", lines)
	}
}

// TestCancelledApartFromFailures: requests the client cancelled on purpose are neither counted
// as completed nor listed among the failure kinds; the line counts them apart.
func TestCancelledApartFromFailures(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	var b strings.Builder
	snap := Snapshot{Sent: 6, Done: 6, Failed: 1, OutputTokens: 40}
	d := Start(Options{W: &b, Total: 6, Snap: func() Snapshot { return snap }, Every: time.Hour, Now: c.now})
	c.advance(time.Second)
	for range 3 {
		d.Observe(ok(20*time.Millisecond, 7*time.Millisecond))
	}
	d.Observe(Request{Failure: "cancelled", TTFT: 30 * time.Millisecond, OutputTokens: 5})
	d.Observe(Request{Failure: "cancelled", TTFT: -1})
	d.Observe(Request{Failure: "http_5xx", TTFT: -1})
	d.Stop()
	got := b.String()
	if want := "completed 3 · failed 1 (http_5xx 1) · cancelled 2"; !strings.Contains(got, want) {
		t.Errorf("line lacks %q:\n%s", want, got)
	}
}
