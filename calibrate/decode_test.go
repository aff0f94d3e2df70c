package calibrate

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/racebuild"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
)

// stepServer writes the records of a server simulated step by step: every running request
// gets one token per step, a request that arrives joins at the next step (which also computes
// its prompt, prefill long) and streams its first token at that step's end, and a decode step
// with n requests running lasts step(n).
func stepServer(t *testing.T, dir string, n int, rate float64, prefill time.Duration, step func(int) time.Duration) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(9, 9))
	type req struct {
		rec  metrics.Record
		left int
	}
	reqs := make([]*req, n)
	var at float64
	for i := range reqs {
		at += rng.ExpFloat64() / rate
		a := int64(at * 1e9)
		reqs[i] = &req{rec: metrics.Record{ID: fmt.Sprintf("s%d", i), Intended: a, Dispatched: a, Sent: a, Headers: a,
			InputTokens: 500, Status: 200}, left: 60 + rng.IntN(200)}
		reqs[i].rec.OutputTokens = reqs[i].left
	}
	var now int64
	var running []*req
	next := 0
	for next < len(reqs) || len(running) > 0 {
		if len(running) == 0 && next < len(reqs) && reqs[next].rec.Intended > now {
			now = reqs[next].rec.Intended
		}
		var joining []*req
		for next < len(reqs) && reqs[next].rec.Intended <= now {
			joining = append(joining, reqs[next])
			next++
		}
		d := step(len(running)) + time.Duration(len(joining))*prefill
		if len(running) == 0 {
			d = time.Duration(len(joining)) * prefill
		}
		now += int64(d)
		var still []*req
		for _, r := range append(running, joining...) {
			if r.rec.FirstToken == 0 {
				r.rec.FirstToken = now
			}
			r.rec.Chunks = append(r.rec.Chunks, metrics.Chunk{T: now, Tokens: 1})
			if r.left--; r.left == 0 {
				r.rec.End = now
				continue
			}
			still = append(still, r)
		}
		running = still
	}
	w, err := metrics.CreateRecordFile(filepath.Join(dir, RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if err := w.Write(&r.rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDecodeResidualsWarn: a server whose decode step doubles once three requests run (a
// step, not a line in the batch) is outside both terms of the model, the memory one and the
// per-sequence one; the decode residuals by batch size say so in a warning. The same records
// with a step that grows by a fixed cost per sequence fit, with no warning on decode.
func TestDecodeResidualsWarn(t *testing.T) {
	racebuild.Heavy(t)
	told := refengine.Config{GPU: "h100", DisablePrefixCaching: true, Seed: 1}
	fit := func(step func(int) time.Duration) *Result {
		dir := stepServer(t, t.TempDir(), 120, 2, 30*time.Millisecond, step)
		res, err := Run(Options{Engine: told, Fit: []string{dir}, MaxEvals: 200, FitMaxNumSeqs: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Log("\n" + res.Table())
		return res
	}
	res := fit(func(n int) time.Duration {
		if n >= 3 {
			return 20 * time.Millisecond
		}
		return 10 * time.Millisecond
	})
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "decode_b") {
		t.Errorf("a decode step that jumps at 3 running: no decode residual in the warnings %q", res.Warnings)
	}
	res = fit(func(n int) time.Duration { return 5*time.Millisecond + time.Duration(n)*2*time.Millisecond })
	if w := strings.Join(res.Warnings, "\n"); strings.Contains(w, "decode_b") || res.Constants.StepOverheadPerSeq < 1800*time.Microsecond ||
		res.Constants.StepOverheadPerSeq > 2200*time.Microsecond {
		t.Errorf("a decode step of 5 ms + 2 ms per sequence: per-sequence cost %s, warnings %q", res.Constants.StepOverheadPerSeq, res.Warnings)
	}
}
