package loadgen

import (
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
			want: []int32{3, 1}, source: metrics.TokensFromUsage, server: 4,
		},
		{
			name: "tokens reported after the last content chunk join it",
			chunks: []string{
				`{"choices":[{"text":" a"}],"usage":{"completion_tokens":1}}`,
				`{"choices":[{"text":"","finish_reason":"length"}],"usage":{"completion_tokens":2}}`,
			},
			want: []int32{2}, source: metrics.TokensFromUsage, server: 2,
		},
		{
			name: "final usage only is recorded, not added",
			chunks: []string{
				`{"choices":[{"text":" a b"}]}`,
				`{"choices":[{"text":" c"}]}`,
				`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3}}`,
			},
			tok:  tokenizer.Reference{},
			want: []int32{2, 1}, source: metrics.TokensFromTokenizer, server: 3,
		},
		{
			name:   "no usage, no tokenizer: one per chunk",
			chunks: []string{`{"choices":[{"text":" a b"}]}`, `{"choices":[{"text":" c"}]}`},
			want:   []int32{1, 1}, source: metrics.TokensFromChunks, server: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &metrics.Record{ServerInputTokens: -1, ServerOutputTokens: -1}
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
			if rec.OutputTokens != sum || rec.TokenSource != tt.source || rec.ServerOutputTokens != tt.server {
				t.Errorf("out %d (chunks sum %d) source %q server %d, want source %q server %d", rec.OutputTokens, sum, rec.TokenSource, rec.ServerOutputTokens, tt.source, tt.server)
			}
		})
	}
}
