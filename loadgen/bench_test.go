package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// BenchmarkParseChunk decodes one vLLM completions chunk with per-chunk usage; the target is
// zero allocations.
func BenchmarkParseChunk(b *testing.B) {
	in := []byte(textChunk(" token", 42))
	var f chunkFields
	var scratch []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		var err error
		if scratch, err = parseChunk(in, &f, scratch); err != nil {
			b.Fatal(err)
		}
	}
}

// sseBody is n streamed chat chunks of one token each, as vLLM sends them, then [DONE].
func sseBody(n int, usage bool) []byte {
	var buf bytes.Buffer
	for i := range n {
		u := ""
		if usage {
			u = fmt.Sprintf(`,"usage":{"prompt_tokens":10,"completion_tokens":%d,"total_tokens":%d}`, i+1, i+11)
		}
		fmt.Fprintf(&buf, "data: {\"id\":\"chatcmpl-abc\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"},\"logprobs\":null,\"finish_reason\":null}]%s}\n\n", tokenizer.Word(uint64(i)), u)
	}
	buf.WriteString("data: [DONE]\n\n")
	return buf.Bytes()
}

// BenchmarkIngest measures the per-chunk hot path of a stream: SSE framing, chunk decoding,
// timestamping and token accounting (per-chunk usage, or the reference tokenizer). One op is
// one chunk of one token, so tok/s = 1e9 / ns/op; the target is >= 200,000 on one core and
// no allocation per chunk.
func BenchmarkIngest(b *testing.B) {
	for _, usage := range []bool{true, false} {
		b.Run(fmt.Sprintf("usage=%v", usage), func(b *testing.B) {
			const n = 4096
			body := sseBody(n, usage)
			c := &client{tok: tokenizer.Reference{}, clock: newRealClock(), start: time.Now()}
			rd := bytes.NewReader(body)
			sr := newSSEReader(rd, readerSize)
			rec := &metrics.Record{Chunks: make([]metrics.Chunk, 0, n)}
			var f chunkFields
			var scratch []byte
			var cnt *counter
			b.ReportAllocs()
			b.SetBytes(int64(len(body) / n))
			for i := 0; b.Loop(); i++ {
				if i%n == 0 {
					rd.Reset(body)
					sr.reset(rd)
					if cnt != nil {
						cnt.finish() // one counter per stream, as in a request
					}
					rec.Chunks = rec.Chunks[:0]
					cnt = &counter{c: c, rec: rec, hash: fnvOffset}
				}
				data, _, err := sr.next()
				if err != nil {
					b.Fatal(err)
				}
				t := c.now()
				if scratch, err = parseChunk(data, &f, scratch); err != nil {
					b.Fatal(err)
				}
				cnt.onChunk(&f, t)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

// BenchmarkRequest measures one whole streamed request (dispatch, HTTP round trip over
// loopback, 16 chunks, record emission) against a minimal local server.
func BenchmarkRequest(b *testing.B) {
	body := sseBody(16, true)
	srv := newBenchServer(b, body)
	reqs := make([]traces.Request, 256)
	for i := range reqs {
		reqs[i] = traces.Request{ID: fmt.Sprint(i), InputTokens: 4, OutputTokens: 16, Prompt: " a b c d"}
	}
	opts := Options{Target: Target{URL: srv, Model: "m", Stream: true}, Concurrency: 8}
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(context.Background(), reqs, opts, func(*metrics.Record) {})
		if err != nil || res.Succeeded != len(reqs) {
			b.Fatalf("%v %+v", err, res)
		}
	}
	b.ReportMetric(float64(b.N*len(reqs))/b.Elapsed().Seconds(), "req/s")
}

func newBenchServer(b *testing.B, body []byte) string {
	return newServer(b, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(body)
	}).URL
}

// BenchmarkOpenLoopDispatch measures the open-loop path (dispatch goroutine, concurrency
// slot, HTTP round trip over loopback, 4 chunks, record) with every request due at once, so
// the figure is the client's ceiling, not a paced rate.
func BenchmarkOpenLoopDispatch(b *testing.B) {
	srv := newBenchServer(b, sseBody(4, true))
	reqs := make([]traces.Request, 512)
	for i := range reqs {
		reqs[i] = traces.Request{ID: fmt.Sprint(i), InputTokens: 1, OutputTokens: 4, Prompt: " a"}
	}
	opts := Options{Target: Target{URL: srv, Model: "m", Stream: true}, MaxConcurrency: 64}
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(context.Background(), reqs, opts, func(*metrics.Record) {})
		if err != nil || res.Succeeded != len(reqs) {
			b.Fatalf("%v %+v", err, res)
		}
	}
	b.ReportMetric(float64(b.N*len(reqs))/b.Elapsed().Seconds(), "req/s")
}
