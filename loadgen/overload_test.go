package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/traces"
)

// In overload (every request due at once behind a cap of 4 that a server holding its
// responses keeps full), the requests dispatched and not yet sent are bounded by MaxWaiting:
// the heap holds a bounded number of late requests, not the whole backlog. Measured as heap
// deltas after a collection, never as times.
func TestOverloadKeepsLateRequestsBounded(t *testing.T) {
	const n, capN, prompt = 3000, 4, 16 << 10
	text := strings.Repeat(" w", prompt/2)
	reqs := make([]traces.Request, n)
	for i := range reqs {
		reqs[i] = traces.Request{ID: fmt.Sprint(i), InputTokens: prompt / 2, OutputTokens: 1, Prompt: text}
	}
	heapInUse := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	measure := func(t *testing.T, maxWaiting int) (grew uint64, waiting int64) {
		hold := make(chan struct{})
		var once sync.Once
		release := func() { once.Do(func() { close(hold) }) }
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			<-hold
			s := startSSE(w)
			s.data(chatChunk(" hi"))
			s.done()
		})
		defer release()
		var prog Progress
		want := int64(maxWaiting)
		if maxWaiting < 0 {
			want = n - capN
		}
		measured := make(chan struct{})
		var stuck string
		go func() {
			defer close(measured)
			defer release()
			// Wait (on the counters, not on time) until the backlog is as large as it gets:
			// the cap is full and the dispatcher has put out all it may.
			deadline := time.Now().Add(time.Minute) // a bound for a broken run, not a timing
			for prog.Sent.Load() < capN || prog.Waiting.Load() < want-capN {
				if time.Now().After(deadline) {
					stuck = fmt.Sprintf("the backlog never reached %d waiting (sent %d, waiting %d)", want-capN, prog.Sent.Load(), prog.Waiting.Load())
					return
				}
				time.Sleep(time.Millisecond)
			}
			grew = heapInUse()
			waiting = prog.Waiting.Load()
		}()
		base := heapInUse()
		res, err := Run(context.Background(), reqs, Options{Target: target(srv.URL), MaxConcurrency: capN, MaxWaiting: maxWaiting, Progress: &prog}, nil)
		<-measured
		if stuck != "" {
			t.Fatalf("MaxWaiting %d: %s", maxWaiting, stuck)
		}
		if err != nil || res.Succeeded != n {
			t.Fatalf("%v %+v", err, res)
		}
		if w := prog.Waiting.Load(); w != 0 {
			t.Errorf("MaxWaiting %d: %d requests still counted as waiting after the run", maxWaiting, w)
		}
		return grew - min(grew, base), waiting
	}
	bounded, w := measure(t, 64)
	if w > 64 {
		t.Errorf("%d requests waiting with MaxWaiting 64", w)
	}
	unbounded, _ := measure(t, -1)
	t.Logf("heap growth with the backlog: MaxWaiting 64: %.1f MB; no bound: %.1f MB (%d late requests of %d KB prompts)", float64(bounded)/1e6, float64(unbounded)/1e6, n, prompt>>10)
	// Unbounded, every late request holds its encoded body (16 KB) and a goroutine: ≥ 48 MB.
	// Bounded, 64 of them and the preparer's look-ahead (256 built calls, ≈ 8 MB).
	if bounded > 16<<20 {
		t.Errorf("heap grew %d MB with MaxWaiting 64, want < 16 MB", bounded>>20)
	}
	if unbounded < 3*bounded {
		t.Errorf("heap grew %d MB without the bound and %d MB with it: the bound should matter", unbounded>>20, bounded>>20)
	}
}
