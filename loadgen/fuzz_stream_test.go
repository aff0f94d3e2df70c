package loadgen

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/tokenizer"
)

// FuzzStream feeds arbitrary bytes to the streaming response path: it must never panic, and
// the record it leaves must be consistent whatever the server sent.
func FuzzStream(f *testing.F) {
	f.Add([]byte("data: " + textChunk(" a b", 2) + "\n\ndata: " + usageChunk(3, 2) + "\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: " + chatChunk("x") + "\n\ndata: {\"error\":{\"message\":\"m\"}}\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: error\ndata: x\n\n"))
	f.Add([]byte(vllmChatCached))
	f.Add([]byte(llamaSpec)) // speculative counts (specfields.go)
	f.Add([]byte(sglangCompletionCached))
	f.Add([]byte(llamaCached))
	f.Add([]byte("data: {\"choices\":[{\"text\":\"a\"}],\"usage\":{\"completion_tokens\":-5}}\n\n"))
	f.Add([]byte(": ping\n\nnonsense\n"))
	f.Add([]byte("data: {\"choices\":[{\"text\":\"a\"}],\"usage\":{\"completion_tokens\":99999999999999}}\n\ndata: {\"choices\":[],\"usage\":{\"completion_tokens\":999999999999999999}}\n\n"))
	sp, err := tokenizer.LoadHF("../tokenizer/testdata/sentencepiece.tokenizer.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for i, tok := range []tokenizer.Tokenizer{nil, tokenizer.Reference{}, sp} {
			// With a tokenizer the text is kept either for the caller (keepText) or for the
			// tokenizer's whole count only.
			keep := i != 2
			c := &client{tok: tok, clock: newRealClock(), start: time.Now(), ext: extensions{ignoreEOS: true}}
			c.bufs.New = func() any { return &streamBufs{sr: newSSEReader(nil, 64)} }
			rec := &metrics.Record{ServerInputTokens: -1, ServerOutputTokens: -1, RequestedTokens: 2}
			resp := &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(body))}
			ctx, cancel := context.WithCancelCause(context.Background())
			c.stream(ctx, cancel, resp, &call{maxTokens: 2, keepText: keep}, rec, &timers{})
			cancel(nil)
			checkStreamedRecord(t, rec)
		}
	})
}

// checkStreamedRecord fails t unless rec, left by a stream of arbitrary bytes, is consistent:
// chunks carry the record's token count with none negative, the first token is the first
// chunk, a token source is named, a success has chunks, and the error is bounded.
func checkStreamedRecord(t *testing.T, rec *metrics.Record) {
	t.Helper()
	sum := 0
	for _, ch := range rec.Chunks {
		if ch.Tokens < 0 {
			t.Fatalf("chunk with %d tokens", ch.Tokens)
		}
		sum += int(ch.Tokens)
	}
	if sum != rec.OutputTokens {
		t.Fatalf("chunks carry %d tokens, record says %d", sum, rec.OutputTokens)
	}
	// Split from a total (not per-chunk usage): every chunk with text carries a token when
	// the total allows it.
	if rec.TokenAttribution != metrics.TokensFromUsage && rec.OutputTokens >= len(rec.Chunks) {
		for i, ch := range rec.Chunks {
			if ch.Tokens < 1 {
				t.Fatalf("chunk %d of %d carries %d tokens of %d (%s)", i, len(rec.Chunks), ch.Tokens, rec.OutputTokens, rec.TokenAttribution)
			}
		}
	}
	if len(rec.Chunks) > 0 && rec.FirstToken != rec.Chunks[0].T {
		t.Fatalf("first token %d, first chunk %d", rec.FirstToken, rec.Chunks[0].T)
	}
	if rec.TokenSource == "" || (rec.OK() && len(rec.Chunks) == 0) {
		t.Fatalf("record %+v", rec)
	}
	if len(rec.Error) > metrics.MaxErrorLen+len("…") {
		t.Fatalf("error of %d bytes", len(rec.Error))
	}
	// Prefix-cache counts: none without a source, never negative, never above the prompt.
	if rec.CacheSource == "" && (rec.CachedInputTokens != 0 || rec.CacheWriteTokens != 0) ||
		rec.CachedInputTokens < 0 || rec.CacheWriteTokens < 0 ||
		rec.CacheSource != "" && rec.ServerInputTokens >= 0 && rec.CachedInputTokens > rec.ServerInputTokens {
		t.Fatalf("cache counts %d read, %d written (%q) of a %d-token prompt",
			rec.CachedInputTokens, rec.CacheWriteTokens, rec.CacheSource, rec.ServerInputTokens)
	}
}

// FuzzStreamPushedMatchesRead: a body pushed frame by frame (the HTTP/2 path: ssePush on the
// connection's read loop) leaves the record that reading it whole leaves (sseReader), in any
// pieces: the same outcome, error, tokens, chunks and token source.
func FuzzStreamPushedMatchesRead(f *testing.F) {
	f.Add([]byte("data: "+textChunk(" a b", 2)+"\n\ndata: "+usageChunk(3, 2)+"\n\ndata: [DONE]\n\n"), uint64(1))
	f.Add([]byte("data: "+chatChunk("x")+"\n\ndata: {\"error\":{\"message\":\"m\"}}\n\n"), uint64(2))
	f.Add([]byte("event: error\ndata: x\n\n"), uint64(3))
	f.Add([]byte("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choi"), uint64(4))
	f.Add([]byte(": ping\n\nnonsense\n"), uint64(5))
	f.Fuzz(func(t *testing.T, body []byte, seed uint64) {
		newClient := func() *client {
			c := &client{clock: newRealClock(), start: time.Now(), ext: extensions{ignoreEOS: true}, maxLine: 256}
			c.bufs.New = func() any { return &streamBufs{sr: newSSEReader(nil, 64)} }
			return c
		}
		run := func(push bool) *metrics.Record {
			c := newClient()
			rec := &metrics.Record{ServerInputTokens: -1, ServerOutputTokens: -1, RequestedTokens: 2}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			k := &call{maxTokens: 2, keepText: true}
			if !push {
				c.stream(ctx, cancel, &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(body))}, k, rec, &timers{})
				return rec
			}
			s := &h2Stream{cc: &h2Conn{streams: map[uint32]*h2Stream{}}, id: 1, gotResp: true, status: 200,
				respCh: make(chan struct{}), endCh: make(chan struct{}), readCh: make(chan struct{}, 1)}
			done := make(chan struct{})
			go func() {
				defer close(done)
				c.stream(ctx, cancel, &http.Response{StatusCode: 200, Body: &h2Body{s: s}}, k, rec, &timers{})
			}()
			r := rand.New(rand.NewPCG(seed, 3))
			for rest := body; len(rest) > 0; {
				n := 1 + r.IntN(len(rest))
				if _, err := s.data(rest[:n], n); err != nil {
					t.Fatal(err)
				}
				rest = rest[n:]
			}
			s.end(nil)
			<-done
			return rec
		}
		a, b := run(false), run(true)
		if a.Failure != b.Failure || a.Error != b.Error || a.OutputTokens != b.OutputTokens || len(a.Chunks) != len(b.Chunks) || a.TokenSource != b.TokenSource {
			t.Fatalf("read: %q %q, %d tokens in %d chunks (%s)\npushed: %q %q, %d tokens in %d chunks (%s)",
				a.Failure, a.Error, a.OutputTokens, len(a.Chunks), a.TokenSource, b.Failure, b.Error, b.OutputTokens, len(b.Chunks), b.TokenSource)
		}
		checkStreamedRecord(t, b)
	})
}
