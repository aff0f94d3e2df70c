// Package progress draws the live progress of a run: a bar redrawn in place on a terminal, a
// plain line every few seconds otherwise. It only reads snapshots and never affects the run.
// It is internal: the CLI's display, not an API.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Snapshot is the live state of a run for the progress display.
type Snapshot struct {
	Sent, InFlight, Done, Failed, OutputTokens int64
}

// Display draws a progress bar on a terminal (redrawn in place) or prints a plain line every
// few seconds otherwise. It never affects the run: it only reads snapshots.
type Display struct {
	w        io.Writer
	terminal bool
	total    int
	snap     func() Snapshot
	now      func() time.Time
	start    time.Time

	mu       sync.Mutex
	lastTok  int64
	lastAt   time.Time
	rate     float64
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// Start begins drawing to w; total is the number of requests expected (0 = unknown). Call Stop
// when the run ends. now may be nil (time.Now).
func Start(w io.Writer, terminal bool, total int, snap func() Snapshot, now func() time.Time) *Display {
	if now == nil {
		now = time.Now
	}
	p := &Display{w: w, terminal: terminal, total: total, snap: snap, now: now, stop: make(chan struct{}), done: make(chan struct{})}
	p.start = now()
	p.lastAt = p.start
	every := 5 * time.Second
	if terminal {
		every = 200 * time.Millisecond
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
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

// Stop draws the final state and ends the display.
func (p *Display) Stop() {
	p.stopOnce.Do(func() {
		close(p.stop)
		<-p.done
		p.draw(true)
	})
}

// line renders one progress line for s at elapsed time el.
func (p *Display) line(s Snapshot, el time.Duration, rate float64) string {
	var b strings.Builder
	if p.total > 0 {
		const width = 24
		frac := float64(s.Done) / float64(p.total)
		if frac > 1 {
			frac = 1
		}
		n := int(frac * width)
		b.WriteByte('[')
		b.WriteString(strings.Repeat("=", n))
		if n < width {
			b.WriteByte('>')
			b.WriteString(strings.Repeat(" ", width-n-1))
		}
		fmt.Fprintf(&b, "] %d/%d done", s.Done, p.total)
	} else {
		fmt.Fprintf(&b, "%d done", s.Done)
	}
	fmt.Fprintf(&b, " · %d in flight · %d failed · %.0f tok/s · %.1fs", s.InFlight, s.Failed, rate, el.Seconds())
	return b.String()
}

func (p *Display) draw(final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.snap()
	now := p.now()
	if dt := now.Sub(p.lastAt).Seconds(); dt >= 0.5 || final {
		if dt > 0 {
			inst := float64(s.OutputTokens-p.lastTok) / dt
			if p.rate == 0 {
				p.rate = inst
			} else {
				p.rate = 0.5*p.rate + 0.5*inst
			}
		}
		p.lastTok, p.lastAt = s.OutputTokens, now
	}
	rate := p.rate
	if final {
		if el := now.Sub(p.start).Seconds(); el > 0 {
			rate = float64(s.OutputTokens) / el
		}
	}
	line := p.line(s, now.Sub(p.start), rate)
	switch {
	case p.terminal && final:
		fmt.Fprintf(p.w, "\r\033[K%s\n", line)
	case p.terminal:
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	default:
		fmt.Fprintln(p.w, line)
	}
}
