//go:build linux

package loadgen

import (
	"errors"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/llmbench/llmbench/internal/ksleep"
)

// fineSleep waits d, with poller on a timerfd read through Go's network poller (or a Go timer
// set to the same time, whichever wakes it first: timerFD.wait), else in nanosleep. The kernel's timer wakes within tens of microseconds where Go timers may take a
// millisecond (the poller's wait is in whole milliseconds). On the timerfd the goroutine waits
// parked, as for a socket: no thread sleeps holding a P, and on waking it runs on whichever P
// polled, where a nanosleep gives its P away after 20 µs and waits for one again behind the
// read loops. But its wake-up then queues behind every socket the same poll found ready: with
// thousands of HTTP/1.1 streams in flight the timerfd is far worse (realClock.poller decides).
// The timerfds are kept in a small pool: concurrent fine sleeps are few (each is the last
// window of one wait), and past maxTimerFDs a sleep falls back to nanosleep.
func fineSleep(d time.Duration, poller bool) {
	if d <= 0 {
		return
	}
	if !poller {
		ksleep.Sleep(d)
		return
	}
	t := takeTimerFD()
	if t == nil {
		ksleep.Sleep(d)
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if unix.TimerfdSettime(t.fd, 0, &spec, nil) != nil {
		ksleep.Sleep(d)
	} else if waited, err := t.wait(d); err != nil {
		// Cannot happen on a live timerfd; a broken one is dropped, and the sleep finished
		// in nanosleep if it had not ended.
		if !waited {
			ksleep.Sleep(d)
		}
		timerFDs.n.Add(-1)
		t.f.Close()
		return
	}
	timerFDs.free <- t
}

// wait waits for the armed timerfd to expire, or for a Go timer set to the same time,
// whichever wakes the goroutine first. The poller sees the timerfd when a P polls: at once
// when one waits idle in it, but while every P runs other goroutines (20 HTTP/2 read loops
// woken by the same burst of tokens) only when one runs out of work. A Go timer is checked
// whenever its P switches goroutines, though on an idle process it may fire a millisecond
// late. The read deadline is that timer, run by the poller for this fd. bench --scenario
// long-streams --http2 --in-flight 20000, 2 cores, 12 interleaved pairs: requests sent ≥ 1 ms
// late with the deadline against the timerfd alone fewer in 9 pairs, geometric mean ratio
// 0.69 (the host's noise moved the counts between 83 and 5,634 a run).
// waited says whether d has passed (the error is then the timerfd's, not the wait's).
func (t *timerFD) wait(d time.Duration) (waited bool, err error) {
	if err := t.f.SetReadDeadline(time.Now().Add(d)); err != nil {
		return false, err
	}
	_, err = t.f.Read(t.buf[:])
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The timer won. Disarm the timerfd: arming it again also clears an expiry that
		// came in the meantime, and a stale poller wake-up only makes the next read retry.
		return true, unix.TimerfdSettime(t.fd, 0, &unix.ItimerSpec{}, nil)
	}
	return err == nil, err
}

const maxTimerFDs = 64

type timerFD struct {
	fd  int
	f   *os.File // registered with the poller (the fd is non-blocking)
	buf [8]byte  // the expiry count a read returns
}

var timerFDs = struct {
	free chan *timerFD
	n    atomic.Int32 // created and not dropped
}{free: make(chan *timerFD, maxTimerFDs)}

// takeTimerFD returns a free timerfd, a new one while fewer than maxTimerFDs exist, or nil.
func takeTimerFD() *timerFD {
	select {
	case t := <-timerFDs.free:
		return t
	default:
	}
	if timerFDs.n.Add(1) > maxTimerFDs {
		timerFDs.n.Add(-1)
		return nil
	}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		timerFDs.n.Add(-1)
		return nil
	}
	return &timerFD{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}
}
