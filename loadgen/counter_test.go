package loadgen

import (
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/tokenizer"
)

// TestCounterUsageDeltas feeds parsed chunks straight to the token accounting.
func TestCounterUsageDeltas(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		tok    tokenizer.Tokenizer
		want   []int32
		source string
		server int
		attrib string
	}{
		{
			name: "held-back tokens go to the next content chunk",
			chunks: []string{
				`{"choices":[{"delta":{"role":"assistant"}}],"usage":{"completion_tokens":0}}`,
				`{"choices":[{"delta":{"content":""}}],"usage":{"completion_tokens":2}}`,
				`{"choices":[{"delta":{"content":" a b c"}}],"usage":{"completion_tokens":3}}`,
				`{"choices":[{"delta":{"content":" d"}}],"usage":{"completion_tokens":4}}`,
				`{"choices":[],"usage":{"completion_tokens":4}}`,
			},
			want: []int32{3, 1}, source: metrics.TokensFromUsage, server: 4, attrib: metrics.TokensFromUsage,
		},
		{
			name: "tokens reported after the last content chunk join it",
			chunks: []string{
				`{"choices":[{"text":" a"}],"usage":{"completion_tokens":1}}`,
				`{"choices":[{"text":"","finish_reason":"length"}],"usage":{"completion_tokens":2}}`,
			},
			want: []int32{2}, source: metrics.TokensFromUsage, server: 2, attrib: metrics.TokensFromUsage,
		},
		{
			name: "final usage only is the total, split by the tokenizer",
			chunks: []string{
				`{"choices":[{"text":" a b"}]}`,
				`{"choices":[{"text":" c"}]}`,
				`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3}}`,
			},
			tok:  tokenizer.Reference{},
			want: []int32{2, 1}, source: metrics.TokensFromUsage, server: 3, attrib: metrics.TokensFromTokenizer,
		},
		{
			// The server: one-token chunks the approximate tokenizer counts as two.
			name: "final usage overrules a tokenizer that counts twice",
			chunks: []string{
				`{"choices":[{"text":" t3"}]}`, `{"choices":[{"text":" t3"}]}`, `{"choices":[{"text":" t3"}]}`,
				`{"choices":[],"usage":{"completion_tokens":3}}`,
			},
			tok:  tokenizer.Approx{},
			want: []int32{1, 1, 1}, source: metrics.TokensFromUsage, server: 3, attrib: metrics.TokensOnePerChunk,
		},
		{
			name: "usage on the last chunk with a choice, rescaled by largest remainder",
			chunks: []string{
				`{"choices":[{"text":" a"}]}`, `{"choices":[{"text":" b c"}]}`,
				`{"choices":[{"text":" d","finish_reason":"stop"}],"usage":{"completion_tokens":8}}`,
			},
			tok: tokenizer.Reference{},
			// weights 1,2,1 of 4 for 8 tokens: exactly 2,4,2.
			want: []int32{2, 4, 2}, source: metrics.TokensFromUsage, server: 8, attrib: metrics.TokensFromTokenizer,
		},
		{
			// Shares 0.8, 2.4, 0.8: the two small chunks get one token each, the third the rest.
			name: "a chunk's share never falls below one token",
			chunks: []string{
				`{"choices":[{"text":" a"}]}`, `{"choices":[{"text":" b c d"}]}`, `{"choices":[{"text":" e"}]}`,
				`{"choices":[],"usage":{"completion_tokens":4}}`,
			},
			tok:  tokenizer.Reference{},
			want: []int32{1, 2, 1}, source: metrics.TokensFromUsage, server: 4, attrib: metrics.TokensFromTokenizer,
		},
		{
			name: "no usage: the tokenizer's count of the whole text, split by the chunks' counts",
			chunks: []string{
				`{"choices":[{"text":" hel"}]}`, `{"choices":[{"text":"lo"}]}`, `{"choices":[{"text":" wor"}]}`, `{"choices":[{"text":"ld"}]}`,
			},
			// " hello world" is 2 reference tokens, the chunks 4 one-token pieces: one each.
			tok:  tokenizer.Reference{},
			want: []int32{1, 1, 1, 1}, source: metrics.TokensFromTokenizer, server: -1, attrib: metrics.TokensFromTokenizer,
		},
		{
			name: "final usage, no tokenizer: spread evenly",
			chunks: []string{
				`{"choices":[{"text":" a b"}]}`, `{"choices":[{"text":" c"}]}`, `{"choices":[{"text":" d"}]}`,
				`{"choices":[],"usage":{"completion_tokens":7}}`,
			},
			want: []int32{3, 2, 2}, source: metrics.TokensFromUsage, server: 7, attrib: metrics.TokensEven,
		},
		{
			name:   "no usage, no tokenizer: one per chunk",
			chunks: []string{`{"choices":[{"text":" a b"}]}`, `{"choices":[{"text":" c"}]}`},
			want:   []int32{1, 1}, source: metrics.TokensFromChunks, server: -1, attrib: metrics.TokensFromChunks,
		},
		{
			name: "usage beyond max_tokens is rejected",
			chunks: []string{
				`{"choices":[{"text":" a b"}]}`, `{"choices":[{"text":" c"}]}`,
				`{"choices":[],"usage":{"completion_tokens":9223372036854775808}}`,
			},
			tok:  tokenizer.Reference{},
			want: []int32{2, 1}, source: metrics.TokensFromTokenizer, server: -1, attrib: metrics.TokensFromTokenizer,
		},
		{
			name: "fractional usage is rejected",
			chunks: []string{
				`{"choices":[{"text":" a"}],"usage":{"completion_tokens":1}}`,
				`{"choices":[{"text":" b"}],"usage":{"completion_tokens":2.5}}`,
			},
			want: []int32{1, 1}, source: metrics.TokensFromChunks, server: -1, attrib: metrics.TokensFromChunks,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &metrics.Record{ServerInputTokens: -1, ServerOutputTokens: -1, RequestedTokens: 16}
			n := counter{c: &client{tok: tt.tok}, rec: rec, hash: fnvOffset}
			var f chunkFields
			var scratch []byte
			for i, c := range tt.chunks {
				var err error
				if scratch, err = parseChunk([]byte(c), &f, scratch); err != nil {
					t.Fatal(err)
				}
				n.onChunk(&f, int64(i+1))
			}
			n.finish()
			if len(rec.Chunks) != len(tt.want) {
				t.Fatalf("chunks %+v, want tokens %v", rec.Chunks, tt.want)
			}
			sum := 0
			for i, c := range rec.Chunks {
				if c.Tokens != tt.want[i] {
					t.Errorf("chunk %d: %d tokens, want %d", i, c.Tokens, tt.want[i])
				}
				sum += int(c.Tokens)
			}
			if rec.OutputTokens != sum || rec.TokenSource != tt.source || rec.ServerOutputTokens != tt.server || rec.TokenAttribution != tt.attrib {
				t.Errorf("out %d (chunks sum %d) source %q attribution %q server %d, want source %q attribution %q server %d",
					rec.OutputTokens, sum, rec.TokenSource, rec.TokenAttribution, rec.ServerOutputTokens, tt.source, tt.attrib, tt.server)
			}
			if (tt.server < 0) != (rec.UsageRejected != "") && strings.Contains(tt.name, "rejected") {
				t.Errorf("usage rejected %q", rec.UsageRejected)
			}
			if tt.tok != nil && rec.ClientOutputTokens == 0 {
				t.Errorf("no client count kept")
			}
		})
	}
}
