package loadgen

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// The idle timeout counts from the last generated text (the timer is not reset per token but
// re-armed for what is left when it fires): in virtual time, a stream whose gaps stay under
// Idle runs past many Idles and succeeds, and one with a longer gap fails exactly Idle after
// its last text.
func TestIdleTimeoutFromLastText(t *testing.T) {
	const idle = 30 * time.Millisecond
	for _, c := range []struct {
		gaps    string // ms between the chunks after the first
		fail    bool
		endAtMs int64 // of the failure, from the first chunk
	}{
		{gaps: "20,20,20,20,20,29"},
		{gaps: "20,20,45", fail: true, endAtMs: 40 + 30},
		{gaps: "31", fail: true, endAtMs: 30},
	} {
		synctest.Test(t, func(t *testing.T) {
			pn, stop := serveVirtual(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				s := startSSE(w)
				s.data(chatChunk(" a"))
				for g := range strings.SplitSeq(c.gaps, ",") {
					ms, _ := strconv.Atoi(g)
					select {
					case <-time.After(time.Duration(ms) * time.Millisecond):
					case <-r.Context().Done():
						return
					}
					s.data(chatChunk(" b"))
				}
				s.done()
			}))
			defer stop()
			tg := Target{URL: "http://engine", Model: "m", Stream: true, Backend: "openai", Timeouts: Timeouts{Idle: idle}}
			var col collector
			_, err := Run(context.Background(), []traces.Request{oneReq("x", 10)}, Options{Target: tg, Dial: pn.Dial, Clock: timerClock{}}, col.sink)
			if err != nil {
				t.Fatal(err)
			}
			r := col.recs[0]
			switch {
			case !c.fail && !r.OK():
				t.Errorf("gaps %s: %s (%s), want success", c.gaps, r.Failure, r.Error)
			case c.fail && r.Failure != metrics.FailTimeoutIdle:
				t.Errorf("gaps %s: failure %q, want timeout_idle", c.gaps, r.Failure)
			case c.fail && (r.End-r.FirstToken) != c.endAtMs*int64(time.Millisecond):
				t.Errorf("gaps %s: failed %v after the first chunk, want %d ms", c.gaps, time.Duration(r.End-r.FirstToken), c.endAtMs)
			}
		})
	}
}
