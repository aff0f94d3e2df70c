package refengine_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/tokenizer"
)

// Simulate runs a trace on a virtual clock. The two requests share a 1,024-token prefix
// through their hash_ids, so the second finds it in the prefix cache; with speculative
// decoding (k = 2, every draft accepted) the first token comes from prefill and the other
// three arrive in one chunk.
func ExampleSimulate() {
	reqs := []refengine.SimRequest{
		{ID: "a", PromptTokens: 1100, HashIDs: []int64{7, 8}, MaxTokens: 4},
		{ID: "b", Arrival: time.Second, PromptTokens: 1100, HashIDs: []int64{7, 8}, MaxTokens: 4},
	}
	res, err := refengine.Simulate(reqs, refengine.Config{Model: "llama-3.1-8b", GPU: "h100", SpecK: 2, SpecAlpha: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, tl := range res.Timelines {
		chunks := []int{}
		for _, em := range tl.Emissions {
			chunks = append(chunks, em.Tokens)
		}
		text := tokenizer.Text(tl.OutputSeed, 0, tl.OutputTokens)
		fmt.Printf("%s: %d prompt tokens, %d cached, chunks %v, output of %d tokens\n", tl.ID, tl.PromptTokens,
			tl.CachedTokens, chunks, tokenizer.Reference{}.Count(text))
	}
	// Output:
	// a: 1100 prompt tokens, 0 cached, chunks [1 3], output of 4 tokens
	// b: 1100 prompt tokens, 1024 cached, chunks [1 3], output of 4 tokens
}

// New starts an engine; its Handler serves the OpenAI-compatible API and Timeline returns the
// ground truth of each request, keyed by its X-Request-Id header.
func ExampleNew() {
	eng, err := refengine.New(refengine.Config{TimeScale: 50}) // 50× faster than the GPU
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()
	srv := httptest.NewServer(eng.Handler())
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/v1/completions",
		strings.NewReader(`{"prompt":"Hello there","max_tokens":5,"temperature":0,"stream":true}`))
	req.Header.Set("X-Request-Id", "hello-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	tl, _ := eng.Timeline("hello-1")
	fmt.Println("events:", strings.Count(string(body), "data: "), "emissions:", len(tl.Emissions),
		"prompt tokens:", tl.PromptTokens, "output tokens:", tl.OutputTokens, "finish:", tl.FinishReason)
	// Output:
	// events: 6 emissions: 5 prompt tokens: 2 output tokens: 5 finish: length
}
