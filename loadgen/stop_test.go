package loadgen

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// TestStoppedEarly: a run canceled with ErrStopped at 1 s (virtual clock) cancels the
// requests in flight at once, whatever the grace, records them as cancelled with the reason,
// leaves the requests not yet sent out of the run without a record, and is not interrupted.
func TestStoppedEarly(t *testing.T) {
	e := &slowEngine{service: 10 * time.Second, chunks: 1}
	reqs := []traces.Request{at("a", 0), at("b", 0), at("c", 20), at("d", 5000), at("e", 6000)}
	var res *Result
	var col collector
	synctest.Test(t, func(t *testing.T) {
		pn, stop := serveVirtual(e)
		defer stop()
		opts := Options{MaxConcurrency: 2, Grace: time.Hour, Clock: timerClock{}, Dial: pn.Dial,
			Target: Target{URL: "http://engine", Model: "m", Stream: true, Backend: "openai"}}
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		time.AfterFunc(time.Second, func() { cancel(fmt.Errorf("%w: over-saturated", ErrStopped)) })
		var err error
		if res, err = RunSource(ctx, traces.FromSlice(reqs), opts, col.sink); err != nil {
			t.Fatal(err)
		}
		if el := res.Elapsed; el != time.Second {
			t.Errorf("run lasted %v, want the 1 s to the stop (no grace)", el)
		}
	})
	if res.Interrupted || res.Sent != 2 || res.Skipped != 3 || res.Dropped != 0 || len(col.recs) != 2 {
		t.Fatalf("result %+v with %d records", res, len(col.recs))
	}
	for _, r := range col.recs {
		if r.Failure != metrics.KindCancelled || !strings.Contains(r.Error, "over-saturated") || r.End != int64(time.Second) {
			t.Errorf("%s: %q %q ended %d", r.ID, r.Failure, r.Error, r.End)
		}
	}
}
