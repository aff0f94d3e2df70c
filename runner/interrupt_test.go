package runner

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuilder is a strings.Builder safe for the watcher goroutine and the test.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestInterruptsWatch(t *testing.T) {
	sig := make(chan os.Signal)
	canceled, flushed, exited := make(chan struct{}), make(chan struct{}), make(chan int, 1)
	var log lockedBuilder
	in := Interrupts{C: sig, Log: &log, Exit: func(code int) { exited <- code }}
	stop := in.Watch(func() { close(canceled) }, func() { close(flushed) }, 3*time.Second)
	defer stop()

	sig <- os.Interrupt // the watcher has received it once this send returns
	<-canceled
	select {
	case <-flushed:
		t.Fatal("the first interrupt flushed: it must only stop gracefully")
	default:
	}
	sig <- os.Interrupt
	<-flushed
	if code := <-exited; code != 130 {
		t.Errorf("exit code %d, want 130", code)
	}
	out := log.String()
	if !strings.Contains(out, "waiting up to 3s for in-flight requests") || !strings.Contains(out, "exiting now") {
		t.Errorf("messages %q", out)
	}
}

func TestInterruptsZeroWatchesNothing(t *testing.T) {
	stop := Interrupts{}.Watch(func() { t.Error("canceled") }, func() { t.Error("flushed") }, time.Second)
	stop()
}
