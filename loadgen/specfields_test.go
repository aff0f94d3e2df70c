package loadgen

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// Speculative counts per response, in each server's real framing, served by a stub on
// 127.0.0.1 and read by a real run: llama.cpp's timings.draft_n / draft_n_accepted in the finish
// chunk (only when it decoded speculatively), SGLang's meta_info of /generate-style bodies
// (spec_verify_ct, spec_draft_token_num, spec_accept_token_num).
const (
	llamaSpec = "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\" a b c\"}}],\"created\":1,\"id\":\"chatcmpl-1\",\"model\":\"m\",\"object\":\"chat.completion.chunk\"}\n\n" +
		"data: {\"choices\":[{\"finish_reason\":\"length\",\"index\":0,\"delta\":{}}],\"created\":1,\"id\":\"chatcmpl-1\",\"model\":\"m\",\"object\":\"chat.completion.chunk\",\"usage\":{\"completion_tokens\":16,\"prompt_tokens\":600,\"total_tokens\":616},\"timings\":{\"cache_n\":0,\"prompt_n\":600,\"prompt_ms\":10.5,\"predicted_n\":16,\"predicted_ms\":40.1,\"draft_n\":12,\"draft_n_accepted\":9}}\n\n" +
		"data: [DONE]\n\n"
	sglangWholeSpec = `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":" a b c"},"finish_reason":"length"}],"usage":{"prompt_tokens":30,"completion_tokens":16,"total_tokens":46},"meta_info":{"id":"c1","prompt_tokens":30,"completion_tokens":16,"spec_verify_ct":6,"spec_accept_length":2.6667,"spec_draft_token_num":20,"spec_accept_token_num":10,"e2e_latency":0.2}}`
)

func TestSpecFieldsPerBackend(t *testing.T) {
	for _, tc := range []struct {
		name, body, contentType string
		stream                  bool
		src                     string
		draft, accepted, passes int
		wantServerOut           int
	}{
		{"llamacpp", llamaSpec, "text/event-stream", true, metrics.SpecFromTimings, 12, 9, 0, 16},
		{"sglang meta_info", sglangWholeSpec, "application/json", false, metrics.SpecFromMetaInfo, 20, 10, 6, 16},
		// A negative count is ignored (no speculative fields), and the usage stays good.
		{"bad draft count", strings.Replace(llamaSpec, `"draft_n":12`, `"draft_n":-3`, 1), "text/event-stream", true, "", 0, 0, 0, 16},
		// More accepted than drafted is a defect of the server, not kept.
		{"accepted above drafted", strings.Replace(llamaSpec, `"draft_n_accepted":9`, `"draft_n_accepted":13`, 1), "text/event-stream", true, "", 0, 0, 0, 16},
		{"no speculative fields", llamaCached, "text/event-stream", true, "", 0, 0, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", tc.contentType)
				io.WriteString(w, tc.body)
			})
			tg := target(srv.URL)
			tg.Stream, tg.API = tc.stream, "chat"
			rec := runOne(t, Options{Target: tg}, traces.Request{ID: "r1", InputTokens: 5, OutputTokens: 16, Prompt: " hello there"})
			if rec.Failure != "" && rec.Failure != metrics.FailShortOutput {
				t.Fatalf("request failed: %s %s", rec.Failure, rec.Error)
			}
			if rec.SpecSource != tc.src || rec.SpecDraftTokens != tc.draft || rec.SpecAcceptedTokens != tc.accepted || rec.SpecPasses != tc.passes {
				t.Errorf("spec %q draft %d accepted %d passes %d; want %q %d %d %d", rec.SpecSource, rec.SpecDraftTokens, rec.SpecAcceptedTokens, rec.SpecPasses,
					tc.src, tc.draft, tc.accepted, tc.passes)
			}
			if rec.ServerOutputTokens != tc.wantServerOut || rec.UsageRejected != "" {
				t.Errorf("server output %d (rejected %q), want %d", rec.ServerOutputTokens, rec.UsageRejected, tc.wantServerOut)
			}
		})
	}
}
