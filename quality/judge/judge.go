// Package judge grades answers with an LLM judge over an OpenAI-compatible chat endpoint
// (issue 17, docs/ARCHITECTURE.md "Quality under load"), after a measured run and never
// inside its timing. Rubric mode asks the judge to reason about one answer against a rubric
// and end with a constrained verdict line ("VERDICT: PASS" or "VERDICT: FAIL") that code
// parses; pairwise mode (ab) shows two answers, asks twice with their order swapped and counts
// only verdicts that agree in both orders, so that a judge's position bias is not counted as
// a preference. Calibrate measures a judge's agreement with human labels (accuracy, Cohen's
// kappa).
//
// The prompts carry Marker, by which the reference engine recognizes a judge request and
// answers it deterministically (refengine/judge.go).
package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/llmbench/llmbench/internal/redact"
	"github.com/llmbench/llmbench/internal/safetext"
)

// Marker opens every judge prompt.
const Marker = "[llmbench-judge v1"

// DefaultRubric is the rubric when none is given.
const DefaultRubric = `The answer is correct, complete and responsive to the question: it answers what was asked, states nothing false, and follows any format the question asks for.`

// Options configure a judge.
type Options struct {
	// Endpoint is the judge server's base URL (http://host:port, or .../v1).
	Endpoint string
	Model    string
	// Rubric is the grading rubric (DefaultRubric when empty).
	Rubric string
	// Concurrency is how many judge calls run at once (default 4).
	Concurrency int
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// MaxTokens bounds the judge's answer (default 512); Timeout each call (default 2 min).
	MaxTokens int
	Timeout   time.Duration
	// Client is the HTTP client (a default one when nil).
	Client *http.Client
}

func (o Options) withDefaults() Options {
	if o.Rubric == "" {
		o.Rubric = DefaultRubric
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = 512
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	return o
}

// Check validates the options a CLI takes from flags.
func (o Options) Check() error {
	if o.Endpoint == "" || o.Model == "" {
		return errors.New("the judge needs both --judge-endpoint and --judge-model")
	}
	if !strings.HasPrefix(o.Endpoint, "http://") && !strings.HasPrefix(o.Endpoint, "https://") {
		return fmt.Errorf("--judge-endpoint %s: want an http:// or https:// URL", safetext.Quote(redact.URL(o.Endpoint), 100))
	}
	if o.Concurrency < 0 {
		return fmt.Errorf("--judge-concurrency %d: want at least 1", o.Concurrency)
	}
	return nil
}

// chatURL is the chat completions URL of an endpoint.
func chatURL(endpoint string) string {
	u := strings.TrimRight(endpoint, "/")
	if strings.HasSuffix(u, "/v1") {
		return u + "/chat/completions"
	}
	return u + "/v1/chat/completions"
}

// Usage is the token cost of judge calls.
type Usage struct {
	PromptTokens, CompletionTokens int64
	Calls                          int
}

func (u *Usage) add(o Usage) {
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.Calls += o.Calls
}

// call sends one judge prompt and returns the judge's text.
func (o *Options) call(ctx context.Context, system, user string) (string, Usage, error) {
	body, err := json.Marshal(map[string]any{
		"model":       o.Model,
		"messages":    []map[string]string{{"role": "system", "content": system}, {"role": "user", "content": user}},
		"max_tokens":  o.MaxTokens,
		"temperature": 0,
		"stream":      false,
	})
	if err != nil {
		return "", Usage{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, chatURL(o.Endpoint), bytes.NewReader(body))
	if err != nil {
		return "", Usage{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	resp, err := o.Client.Do(req)
	if err != nil {
		return "", Usage{Calls: 1}, fmt.Errorf("judge call: %w", scrub(err, o))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return "", Usage{Calls: 1}, fmt.Errorf("judge call: reading the response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", Usage{Calls: 1}, fmt.Errorf("judge call: HTTP %d: %s", resp.StatusCode, safetext.Quote(o.policy().String(string(data)), 200))
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int64 `json:"prompt_tokens"`
			CompletionTokens int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return "", Usage{Calls: 1}, fmt.Errorf("judge call: the response is not chat completion JSON: %v", err)
	}
	u := Usage{PromptTokens: out.Usage.PromptTokens, CompletionTokens: out.Usage.CompletionTokens, Calls: 1}
	if len(out.Choices) == 0 {
		return "", u, errors.New("judge call: the response has no choices")
	}
	return out.Choices[0].Message.Content, u, nil
}

// scrub hides the judge's secrets (API key, URL user info and query values) in an error.
func scrub(err error, o *Options) error {
	return errors.New(o.policy().String(err.Error()))
}

func (o *Options) policy() *redact.Policy {
	return redact.New(redact.Target{URL: o.Endpoint, APIKey: o.APIKey})
}

// ShownEndpoint is the endpoint as results show it, secrets hidden.
func (o Options) ShownEndpoint() string { return o.policy().URL(o.Endpoint) }

// verdictRE is the constrained verdict line: the judge's last non-empty line.
var verdictRE = regexp.MustCompile(`(?i)^\**\s*verdict\s*:\s*\**\s*(pass|fail|1|2|tie)\s*\**\.?\s*$`)

// ParseVerdict reads the verdict of a judge's answer: its last non-empty line must be
// "VERDICT: X" (case and surrounding asterisks ignored) with X one of allowed (upper case:
// PASS, FAIL, 1, 2, TIE). The reasoning is everything before that line.
func ParseVerdict(text string, allowed ...string) (verdict, reasoning string, err error) {
	lines := strings.Split(strings.TrimRight(text, " \t\r\n"), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	m := verdictRE.FindStringSubmatch(last)
	if m == nil {
		return "", "", fmt.Errorf("no verdict line: the answer must end with a line \"VERDICT: %s\" (it ends with %s)", strings.Join(allowed, "\" or \"VERDICT: "), safetext.Quote(last, 80))
	}
	v := strings.ToUpper(m[1])
	for _, a := range allowed {
		if v == a {
			return v, strings.TrimSpace(strings.Join(lines[:len(lines)-1], "\n")), nil
		}
	}
	return "", "", fmt.Errorf("verdict %q is not one of %s", v, strings.Join(allowed, ", "))
}

// forEach runs fn(i) for i in [0, n) on conc workers.
func forEach(ctx context.Context, n, conc int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < min(conc, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
}
