package realserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStartServesTheModel: the server lists the model created from the Modelfile, and a
// greedy chat request generates exactly max_tokens tokens (finish_reason "length"): the
// model's output matrix never lets end-of-sequence win, so tests control output lengths.
func TestStartServesTheModel(t *testing.T) {
	s := Start(t, Options{})
	hc := &http.Client{Timeout: time.Minute}
	resp, err := hc.Get(s.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"`+ModelName) {
		t.Fatalf("/v1/models: %s", body)
	}
	for _, n := range []int{1, 37, 300} {
		req := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"shyhy tasy hobai"}],"max_tokens":%d,"temperature":0}`, s.Model, n)
		resp, err := hc.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(req))
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
				Message      struct{ Content string }
			}
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || len(out.Choices) != 1 {
			t.Fatalf("max_tokens %d: %v %+v", n, err, out)
		}
		if out.Usage.CompletionTokens != n || out.Choices[0].FinishReason != "length" || out.Choices[0].Message.Content == "" {
			t.Errorf("max_tokens %d: %d tokens, finish %q, text %q", n, out.Usage.CompletionTokens, out.Choices[0].FinishReason, out.Choices[0].Message.Content)
		}
	}
}
