package refengine

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkSchedulerStep measures one engine iteration (plan + complete) with 1,024 running
// decode sequences of ~1k context. Target (issue 3): < 200 µs CPU and no allocation per step.
func BenchmarkSchedulerStep(b *testing.B) {
	for _, spec := range []int{0, 4} {
		name := "decode1024"
		if spec > 0 {
			name += "-spec4"
		}
		b.Run(name, func(b *testing.B) {
			r, err := Config{MaxNumSeqs: 1024, NumBlocks: 1 << 20, SpecK: spec}.resolve()
			if err != nil {
				b.Fatal(err)
			}
			c := r.newCore()
			seqs := make([]seq, 1024)
			tls := make([]Timeline, 1024)
			for i := range seqs {
				tls[i].Emissions = make([]Emission, 0, 1024)
				seqs[i] = seq{tl: &tls[i], promptTokens: 1000, target: 100000, rng: uint64(i)}
				seqs[i].hashes = blockHashes(nil, nil, 1000, 16, 512, uint64(i))
				c.submit(&seqs[i])
			}
			for c.waiting.len() > 0 {
				d, _ := c.plan()
				c.complete(c.now+d, d)
			}
			if len(c.running) != 1024 {
				b.Fatalf("%d running", len(c.running))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if i%1000 == 999 {
					b.StopTimer()
					for j := range tls {
						tls[j].Emissions = tls[j].Emissions[:0]
					}
					b.StartTimer()
				}
				d, ok := c.plan()
				if !ok {
					b.Fatal("nothing scheduled")
				}
				c.complete(c.now+d, d)
			}
			b.ReportMetric(float64(c.work.Seqs), "seqs/step")
		})
	}
}

// BenchmarkHTTPStreams measures the engine's CPU cost per streamed request (64 tokens, 256 in
// flight) on a virtual clock, so only the HTTP path, the scheduler and SSE encoding count.
func BenchmarkHTTPStreams(b *testing.B) {
	_, url := startEngine(b, Config{Clock: NewVirtualClock(fixedNow())})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	body := `{"prompt":"benchmark prompt text","max_tokens":64,"stream":true,"stream_options":{"include_usage":true}}`
	b.ReportAllocs()
	b.SetParallelism(128)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if n == 0 {
				b.Error("empty stream")
			}
		}
	})
}
