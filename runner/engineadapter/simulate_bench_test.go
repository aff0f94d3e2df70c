package engineadapter

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/traces"
)

// BenchmarkSimulateOverload measures simulate's pipeline (trace file read as it goes, engine,
// records handed to a sink) on Llama 3.1 8B on two H200s (about 40 requests of 1,300 prompt
// and 200 output tokens a second; docs/twin.md): a million requests offered at ten times that
// rate, where nearly all of them wait, and a hundred thousand at half of it. It reports the
// peak of the heap in use (sampled every 20,000 records) and the longest the engine's waiting
// requests reached. Targets (issue 35): the million in < 60 s and < 1 GB RSS for the whole
// command, the hundred thousand in < 5 s, on two cores.
//
//	go test -run '^$' -bench SimulateOverload -benchtime 1x ./runner/engineadapter/
func BenchmarkSimulateOverload(b *testing.B) {
	for _, c := range []struct {
		name string
		n    int
		rate float64
	}{
		{"1M-10x", 1_000_000, 400},
		{"100k-half", 100_000, 20},
	} {
		b.Run(c.name, func(b *testing.B) {
			if testing.Short() {
				b.Skip("simulates up to a million requests")
			}
			path := filepath.Join(b.TempDir(), "trace.jsonl")
			writeChatTrace(b, path, c.n, c.rate)
			src, err := traces.OpenFile(path, traces.ReadOptions{})
			if err != nil {
				b.Fatal(err)
			}
			sim := &Simulator{Config: refengine.Config{GPU: "h200", TP: 2}, RateScale: 1}
			var peak uint64
			for b.Loop() {
				n := 0
				p, err := sim.Produce(context.Background(), src, func(*metrics.Record) {
					if n++; n%20_000 == 0 {
						var m runtime.MemStats
						runtime.ReadMemStats(&m)
						peak = max(peak, m.HeapInuse)
					}
				})
				if err != nil {
					b.Fatal(err)
				}
				if n != c.n {
					b.Fatalf("%d records of %d", n, c.n)
				}
				if c.rate > 100 && len(p.Warnings) == 0 {
					b.Fatal("ten times the capacity was not reported as overload")
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		})
	}
}

// writeChatTrace writes n requests arriving as a Poisson process of rate per second, about
// the chat preset's lengths (prompts normal around 1,300 tokens, sd 520; outputs exponential
// with mean 200), line by line.
func writeChatTrace(b testing.TB, path string, n int, rate float64) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	rng := rand.New(rand.NewPCG(35, 1))
	at := 0.0
	for i := 0; i < n; i++ {
		at += rng.ExpFloat64() / rate
		in := min(8000, max(16, int(1300*rng.NormFloat64()*0.4+1300)))
		out := min(2000, max(1, int(rng.ExpFloat64()*200)))
		fmt.Fprintf(w, `{"id":"r%d","arrival_s":%.6f,"class":"chat","input_tokens":%d,"output_tokens":%d}`+"\n", i, at, in, out)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}
