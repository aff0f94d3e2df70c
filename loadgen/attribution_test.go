package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// Per-chunk attribution against servers whose chunks carry a known number of tokens
// (issue 31 item 4): the server's usage reports only the total, at the end, so the client
// splits it among the chunks.

// pieceServer streams each response as chunks of tokens in llama.cpp's chat framing (a role
// chunk with null content, one event per chunk, a finish chunk with the usage), the chunks
// drawn by gen from a generator seeded by the response's number. It remembers what it sent
// under the response id.
type pieceServer struct {
	gen  func(r *rand.Rand, maxTokens int) [][]string
	mu   sync.Mutex
	n    int
	sent map[string][][]string
}

func (p *pieceServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := decodeReq(nil, r)
	p.mu.Lock()
	p.n++
	id := fmt.Sprintf("chatcmpl-%d", p.n)
	chunks := p.gen(rand.New(rand.NewPCG(31, uint64(p.n))), req.MaxTokens)
	p.sent[id] = chunks
	p.mu.Unlock()
	s := startSSE(w)
	s.data(fmt.Sprintf(`{"id":%q,"choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}`, id))
	total := 0
	for _, c := range chunks {
		total += len(c)
		b, _ := json.Marshal(strings.Join(c, ""))
		s.data(fmt.Sprintf(`{"id":%q,"choices":[{"index":0,"delta":{"content":%s},"finish_reason":null}]}`, id, b))
	}
	s.data(fmt.Sprintf(`{"id":%q,"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":%d,"total_tokens":%d}}`, id, total, total+5))
	s.done()
}

// runPieces runs n requests of out tokens each against p and returns the records by
// response id.
func runPieces(t *testing.T, p *pieceServer, tok tokenizer.Tokenizer, n, out int) map[string]metrics.Record {
	t.Helper()
	p.sent = map[string][][]string{}
	srv := newServer(t, p.ServeHTTP)
	tg := target(srv.URL)
	tg.API, tg.Backend = "chat", "llamacpp"
	reqs := make([]traces.Request, n)
	for i := range reqs {
		reqs[i] = traces.Request{ID: fmt.Sprint(i), InputTokens: 5, OutputTokens: out, Prompt: " hello there"}
	}
	var col collector
	if _, err := Run(context.Background(), reqs, Options{Target: tg, Tokenizer: tok}, col.sink); err != nil {
		t.Fatal(err)
	}
	recs := map[string]metrics.Record{}
	for _, r := range col.recs {
		if !r.OK() {
			t.Fatalf("request %s: %s %s", r.ID, r.Failure, r.Error)
		}
		recs[r.ResponseID] = r
	}
	if len(recs) != n {
		t.Fatalf("%d records by response id, want %d", len(recs), n)
	}
	return recs
}

func loadTestTokenizer(t *testing.T, name string) *tokenizer.HF {
	t.Helper()
	h, err := tokenizer.LoadHF("../tokenizer/testdata/" + name + ".tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// onePerEvent streams one token per event, each token drawn from pieces.
func onePerEvent(pieces []string) func(r *rand.Rand, maxTokens int) [][]string {
	return func(r *rand.Rand, maxTokens int) [][]string {
		out := make([][]string, maxTokens)
		for i := range out {
			out[i] = []string{pieces[r.IntN(len(pieces))]}
		}
		return out
	}
}

// byteLevelPieces are tokens of a byte-level vocabulary that the SentencePiece fixture counts
// as anything from one to eight tokens (byte fallback for letters it lacks).
var byteLevelPieces = []string{" the", " quick", "é", "ll", "\n", " 42", "aa", " wor", "ld", "!", " hello", "o", " 東京", "\n\n", " x"}

// TestOneTokenPerEventIsExact: a server that sends one token per event, with usage only at
// the end, gets exactly one token per chunk whatever the client tokenizer makes of each
// chunk's text, and the total is the server's. The client's count (of the whole text)
// differs from the server's here, truly: the summary warns with the size of the difference
// and says the per-chunk counts did not depend on it.
func TestOneTokenPerEventIsExact(t *testing.T) {
	sp := loadTestTokenizer(t, "sentencepiece")
	varied := 0
	for _, p := range byteLevelPieces {
		if tokenizer.CountChunk(sp, p) != 1 {
			varied++
		}
	}
	if varied < len(byteLevelPieces)/2 {
		t.Fatalf("fixture: only %d of %d pieces count other than 1: the test would not show the split", varied, len(byteLevelPieces))
	}
	p := &pieceServer{gen: onePerEvent(byteLevelPieces)}
	const n, out = 40, 48
	recs := runPieces(t, p, sp, n, out)
	var diff, server int64
	mismatched := 0
	var list metrics.SliceSource
	for id, rec := range recs {
		sent := p.sent[id]
		if len(rec.Chunks) != len(sent) {
			t.Fatalf("%s: %d chunks, server sent %d", id, len(rec.Chunks), len(sent))
		}
		for i, c := range rec.Chunks {
			if c.Tokens != 1 {
				t.Fatalf("%s: chunk %d (%q) carries %d tokens, want 1", id, i, sent[i][0], c.Tokens)
			}
		}
		if rec.OutputTokens != len(sent) || rec.ServerOutputTokens != len(sent) || rec.TokenAttribution != metrics.TokensOnePerChunk {
			t.Fatalf("%s: %d output tokens (server %d, attribution %q), want %d one per chunk", id, rec.OutputTokens, rec.ServerOutputTokens, rec.TokenAttribution, len(sent))
		}
		var text strings.Builder
		for _, c := range sent {
			text.WriteString(c[0])
		}
		if want := tokenizer.CountChunk(sp, text.String()); rec.ClientOutputTokens != want {
			t.Errorf("%s: client count %d, want the tokenizer's count of the whole text %d", id, rec.ClientOutputTokens, want)
		}
		server += int64(len(sent))
		if d := rec.ClientOutputTokens - len(sent); d != 0 {
			mismatched++
			diff += int64(max(d, -d))
		}
		list = append(list, rec)
	}
	sum, err := metrics.Summarize(list, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if mismatched <= n/50 {
		t.Fatalf("fixture: only %d of %d requests differ", mismatched, n)
	}
	want := fmt.Sprintf("(%d of %d) have a client output token count that differs from the server's usage, by %d tokens in all (%.1f%% of the server's %d); the server's counts gave every total and per-chunk split, so per-token metrics are unaffected",
		mismatched, n, diff, 100*float64(diff)/float64(server), server)
	if all := strings.Join(sum.Warnings, "\n"); !strings.Contains(all, want) {
		t.Errorf("warnings %q\nwant one containing %q", sum.Warnings, want)
	}
}

// TestOneTokenPerEventAgreeingTokenizer: the same framing with the client's tokenizer the
// server's own vocabulary and canonical tokens: one token per chunk, a client count equal to
// the server's on every request, and no warning.
func TestOneTokenPerEventAgreeingTokenizer(t *testing.T) {
	sp := loadTestTokenizer(t, "sentencepiece")
	p := &pieceServer{gen: onePerEvent([]string{" hello", " world", " he", " w"})}
	recs := runPieces(t, p, sp, 20, 32)
	var list metrics.SliceSource
	for id, rec := range recs {
		if rec.ClientOutputTokens != len(p.sent[id]) || rec.TokenAttribution != metrics.TokensOnePerChunk {
			t.Errorf("%s: client count %d, server %d, attribution %q", id, rec.ClientOutputTokens, len(p.sent[id]), rec.TokenAttribution)
		}
		list = append(list, rec)
	}
	sum, err := metrics.Summarize(list, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests.TokenMismatch != 0 || sum.Requests.TokenCompared != 20 || sum.Requests.TokenMismatchTokens != 0 {
		t.Errorf("mismatch %v of %d (%d tokens)", sum.Requests.TokenMismatch, sum.Requests.TokenCompared, sum.Requests.TokenMismatchTokens)
	}
	for _, w := range sum.Warnings {
		if strings.Contains(w, "token counts") {
			t.Errorf("warning %q", w)
		}
	}
}

// TestSeveralTokensPerChunk: a server that sends one to four tokens per chunk (a speculative
// pass as one chunk, as vLLM and SGLang do) with usage only at the end. With the server's
// vocabulary on the client every chunk gets exactly its tokens; with another tokenizer, or
// none, the chunks still sum to the server's total and none gets fewer than one.
func TestSeveralTokensPerChunk(t *testing.T) {
	words := []string{" hello", " world", " he", " w", " hell"}
	p := &pieceServer{gen: func(r *rand.Rand, maxTokens int) [][]string {
		var out [][]string
		for left := maxTokens; left > 0; {
			m := min(1+r.IntN(4), left)
			c := make([]string, m)
			for i := range c {
				c[i] = words[r.IntN(len(words))]
			}
			out = append(out, c)
			left -= m
		}
		return out
	}}
	for _, tc := range []struct {
		name   string
		tok    tokenizer.Tokenizer
		exact  bool
		attrib string
	}{
		{"server's vocabulary", loadTestTokenizer(t, "sentencepiece"), true, metrics.TokensFromTokenizer},
		{"byte-level tokenizer", loadTestTokenizer(t, "bytelevel"), false, metrics.TokensFromTokenizer},
		{"no tokenizer", nil, false, metrics.TokensEven},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := runPieces(t, p, tc.tok, 30, 40)
			for id, rec := range recs {
				sent := p.sent[id]
				if len(rec.Chunks) != len(sent) || rec.OutputTokens != 40 || rec.ServerOutputTokens != 40 || rec.TokenAttribution != tc.attrib {
					t.Fatalf("%s: %d chunks (sent %d), %d tokens (server %d), attribution %q, want 40 by %q",
						id, len(rec.Chunks), len(sent), rec.OutputTokens, rec.ServerOutputTokens, rec.TokenAttribution, tc.attrib)
				}
				sum := 0
				for i, c := range rec.Chunks {
					sum += int(c.Tokens)
					if c.Tokens < 1 || tc.exact && int(c.Tokens) != len(sent[i]) {
						t.Fatalf("%s: chunk %d (%q) carries %d tokens, server sent %d", id, i, strings.Join(sent[i], ""), c.Tokens, len(sent[i]))
					}
				}
				if sum != 40 {
					t.Fatalf("%s: chunks sum to %d, server's usage 40", id, sum)
				}
			}
		})
	}
}

// TestClientCountOfLongOutput: the text kept for the tokenizer's whole count is bounded
// (countTextLimit); past it the stream stops keeping text and the client count is the sum of
// the chunks' own counts.
func TestClientCountOfLongOutput(t *testing.T) {
	for _, size := range []int{100, 2 * countTextLimit(16)} {
		rec := &metrics.Record{ServerInputTokens: -1, ServerOutputTokens: -1, RequestedTokens: 16}
		n := counter{c: &client{tok: tokenizer.Reference{}}, rec: rec, hash: fnvOffset}
		var f chunkFields
		var scratch []byte
		chunks, own := 0, 0
		var text strings.Builder
		for text.Len() < size {
			// "ab" pieces run together into one reference token (a run of letters): the whole
			// text's count is 1, the chunks' sum one per chunk.
			piece := "ab"
			text.WriteString(piece)
			own += tokenizer.Reference{}.Count(piece)
			var err error
			if scratch, err = parseChunk([]byte(textChunk(piece, -1)), &f, scratch); err != nil {
				t.Fatal(err)
			}
			n.onChunk(&f, int64(chunks+1))
			chunks++
			if kept := n.text; kept != nil && len(*kept) > countTextLimit(16) {
				t.Fatalf("%d bytes kept for the count, limit %d", len(*kept), countTextLimit(16))
			}
		}
		n.finish()
		want := tokenizer.CountChunk(tokenizer.Reference{}, text.String())
		if size > countTextLimit(16) {
			want = own
		}
		if rec.ClientOutputTokens != want || rec.OutputTokens != chunks || len(rec.Chunks) != chunks || n.text != nil {
			t.Errorf("%d bytes: client count %d, output %d over %d chunks, want %d and one per chunk (text released: %v)",
				text.Len(), rec.ClientOutputTokens, rec.OutputTokens, len(rec.Chunks), want, n.text == nil)
		}
	}
}
