package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/workloads"
)

// errNoTokenize: the server has no usable /tokenize (SizingAuto then calibrates).
var errNoTokenize = errors.New("no usable /tokenize endpoint")

const (
	// sizingWorkers is how many /tokenize calls are in flight while sizing.
	sizingWorkers = 8
	// sizingCallTimeout bounds one sizing call when the target sets no total timeout.
	sizingCallTimeout = 2 * time.Minute // or Timeouts.Total when shorter
	// maxTokenizeBody bounds a /tokenize or probe response read while sizing.
	maxTokenizeBody = 4 << 20
	// maxSizingOffset bounds the tokens /tokenize adds to every input (special tokens, a
	// leading word marker), and how far below the word costs a prompt's count may be.
	maxSizingOffset = 64
	// maxPromptOverhead bounds what a real request adds to a prompt (special tokens and a
	// chat template, which may hold a default system prompt).
	maxPromptOverhead = 1 << 14
	// maxTokensPerWord bounds a calibrated word's cost (a reference word is 4-6 bytes).
	maxTokensPerWord = 16
)

// MeasureSizing measures the prompt sizing opts.PromptSizing asks for against opts.Target
// (see SizingServer). It returns nil for SizingTokenizer and "", and an error that says what
// to do when the target cannot be measured. The run then uses it through Options.Sizer;
// RunSource calls it itself when Options.Sizer is nil.
func MeasureSizing(ctx context.Context, opts Options) (*Sizer, error) {
	if err := checkSizing(opts.PromptSizing); err != nil || opts.PromptSizing == "" || opts.PromptSizing == SizingTokenizer {
		return nil, err
	}
	c, err := newClient(opts.Target, opts.Dial)
	if err != nil {
		return nil, err
	}
	defer c.close()
	c.tok = opts.Tokenizer
	c.model = opts.Target.Model
	if c.model == "" {
		if c.model, err = c.discover(ctx); err != nil {
			return nil, err
		}
	}
	return c.measureSizing(ctx, opts.PromptSizing)
}

func checkSizing(mode string) error {
	if mode != "" && !strings.Contains(" "+strings.Join(SizingModes(), " ")+" ", " "+mode+" ") {
		return fmt.Errorf("prompt sizing %s: want one of %s", safetext.Quote(mode, 40), strings.Join(SizingModes(), ", "))
	}
	return nil
}

// measureSizing measures mode (SizingServer, SizingCalibrate or SizingAuto) with c. Auto
// tries /tokenize, then probe requests, and when neither works falls back to fitting with the
// run's tokenizer, saying why in the Sizer (the run's input check then tells whether the
// lengths held); the explicit modes fail instead.
func (c *client) measureSizing(ctx context.Context, mode string) (*Sizer, error) {
	const fix = "; pass --tokenizer with the model's tokenizer.json"
	switch mode {
	case SizingServer:
		s, err := c.sizeByTokenize(ctx)
		if err != nil {
			return nil, fmt.Errorf("prompt sizing on the server: %w%s, or --prompt-sizing calibrate", err, fix)
		}
		return s, nil
	case SizingCalibrate:
		s, err := c.sizeByProbes(ctx)
		if err != nil {
			return nil, fmt.Errorf("prompt sizing by calibration: %w%s", err, fix)
		}
		return s, nil
	}
	s, err := c.sizeByTokenize(ctx)
	if err == nil || ctx.Err() != nil {
		return s, err
	}
	s, cerr := c.sizeByProbes(ctx)
	if cerr == nil {
		s.Detail += "; /tokenize unusable: " + safetext.Clip(err.Error(), 200)
		return s, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	name := "the reference tokenizer"
	if c.tok != nil {
		name = c.tok.Name()
	}
	return &Sizer{Method: SizingTokenizer, Detail: fmt.Sprintf("the server could not be measured (%s; calibration: %s): prompts fitted with %s, unverified until the server's usage says%s",
		safetext.Clip(err.Error(), 200), safetext.Clip(cerr.Error(), 200), name, fix)}, nil
}

// sizeByTokenize learns each vocabulary word's cost from /tokenize, the tokens /tokenize adds
// to every input (from pairs of words), checks the sum on sample texts, and measures what a
// real request adds with one probe.
func (c *client) sizeByTokenize(ctx context.Context) (*Sizer, error) {
	words := sizingWords(SizingVocab)
	// The backend's request format first, then the other one (a llama.cpp server benchmarked
	// with the default --backend, say).
	llama := c.target.Backend == "llamacpp"
	if err := c.tokenizeReads(ctx, words, llama); err != nil {
		if !errors.Is(err, errNoTokenize) || c.tokenizeReads(ctx, words, !llama) != nil {
			return nil, err
		}
		llama = !llama
	}
	fill := workloads.FillerWords()
	texts := append(append([]string(nil), words...), fill...)
	const pairs = 8
	for i := range pairs {
		texts = append(texts, words[2*i]+words[2*i+1])
	}
	samples := sampleTexts(words)
	texts = append(texts, samples...)
	counts, err := c.tokenizeAll(ctx, texts, llama)
	if err != nil {
		return nil, err
	}
	nw := len(words) + len(fill) // the pairs' counts follow the words' and fillers'
	extras := make([]int, pairs)
	for i := range pairs {
		extras[i] = counts[2*i] + counts[2*i+1] - counts[nw+i]
	}
	k := modalExtra(extras)
	if k < 0 || k > maxSizingOffset {
		return nil, fmt.Errorf("%w: /tokenize counts do not add up (two words together differ from their sum by %d tokens)", errNoTokenize, k)
	}
	cost := make([]float64, len(words))
	for i := range words {
		cost[i] = float64(max(counts[i]-k, 1))
	}
	s := newSizer(SizingServer, "", words, cost, k)
	for i, f := range fill {
		if n := counts[len(words)+i] - k; n >= 1 {
			s.costs.cost[f] = float64(n)
		}
	}
	errs := make([]int, len(samples))
	for i, t := range samples {
		errs[i] = s.costs.Count(t) + k - counts[nw+pairs+i]
	}
	probe := "the prompt overhead from a probe request's usage.prompt_tokens"
	if n, err := c.probe(ctx, samples[0]); err == nil {
		if s.Offset = n - s.costs.Count(samples[0]); s.Offset < -maxSizingOffset || s.Offset > maxPromptOverhead {
			return nil, fmt.Errorf("a probe request of %d words was counted %d prompt tokens, %d from what /tokenize says: not a usable overhead", strings.Count(samples[0], " "), n, s.Offset)
		}
	} else {
		probe = fmt.Sprintf("the prompt overhead from /tokenize (a probe request gave none: %v)", err)
	}
	s.Detail = fmt.Sprintf("word costs from the server's /tokenize (%d words, %.2f tokens per word, %s), %d tokens added per prompt: %s",
		len(words), s.TokensPerWord, describeVerify(errs), s.Offset, probe)
	return s, nil
}

// tokenizeReads checks that /tokenize reads the text in the given format: a longer text must
// count more (llama.cpp answers a body without "content" with an empty list, not an error).
func (c *client) tokenizeReads(ctx context.Context, words []string, llama bool) error {
	one, err := c.tokenize(ctx, words[0], llama)
	if err != nil {
		return err
	}
	eight, err := c.tokenize(ctx, joinWords(words[:8]), llama)
	if err != nil {
		return err
	}
	if eight <= one {
		return fmt.Errorf("%w: POST /tokenize counted one word %d tokens and eight words %d: it does not read the text", errNoTokenize, one, eight)
	}
	return nil
}

// sampleTexts are whole texts of the vocabulary's words on which the learned costs are checked.
func sampleTexts(words []string) []string {
	var out []string
	for i, n := range []int{48, 160, 96, 300} {
		pick := make([]string, n)
		for j := range pick {
			pick[j] = words[tokenizer.Mix(uint64(i)<<32|uint64(j))%uint64(len(words))]
		}
		out = append(out, joinWords(pick))
	}
	return out
}

// sizeByProbes calibrates a mean cost per word and the fixed part from the usage of probe
// requests of two lengths (two of each).
func (c *client) sizeByProbes(ctx context.Context) (*Sizer, error) {
	if api := c.target.API; api != "" && api != "chat" && api != "completions" {
		return nil, fmt.Errorf("probe requests need --api completions or chat, not %s", api)
	}
	words := sizingWords(SizingVocab)
	lengths := []int{32, 32, 256, 256}
	got := make([]int, len(lengths))
	for i, n := range lengths {
		pick := make([]string, n)
		for j := range pick {
			pick[j] = words[tokenizer.Mix(uint64(i+100)<<32|uint64(j))%uint64(len(words))]
		}
		p, err := c.probe(ctx, joinWords(pick))
		if err != nil {
			return nil, err
		}
		got[i] = p
	}
	short, long := float64(got[0]+got[1])/2, float64(got[2]+got[3])/2
	per := (long - short) / float64(lengths[2]-lengths[0])
	if !(per > 0) {
		return nil, fmt.Errorf("probe requests of %d and %d words were counted %v prompt tokens: no usable cost per word", lengths[0], lengths[2], got)
	}
	offset := int(math.Round(short - per*float64(lengths[0])))
	if offset < -maxSizingOffset || offset > maxPromptOverhead || per > maxTokensPerWord {
		return nil, fmt.Errorf("probe requests of %d and %d words were counted %v prompt tokens: %.2f tokens per word and %d added per prompt are not plausible", lengths[0], lengths[2], got, per, offset)
	}
	cost := make([]float64, len(words))
	for i := range cost {
		cost[i] = per
	}
	s := newSizer(SizingCalibrate, "", words, cost, offset)
	s.Detail = fmt.Sprintf("calibrated from %d probe requests' usage.prompt_tokens: %.2f tokens per word, %d added per prompt (a mean: single prompts vary)", len(lengths), per, offset)
	return s, nil
}

// tokenizeAll runs c.tokenize over texts with sizingWorkers in flight; the first error wins.
func (c *client) tokenizeAll(ctx context.Context, texts []string, llama bool) ([]int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]int, len(texts))
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range sizingWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				n, err := c.tokenize(ctx, texts[i], llama)
				if err != nil {
					once.Do(func() { first = err; cancel() })
					continue
				}
				out[i] = n
			}
		}()
	}
feed:
	for i := range texts {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return out, first
}

// tokenize asks the server's /tokenize how many tokens text is, special tokens included, in
// llama.cpp's request format (content and add_special) or vLLM's and SGLang's (model, prompt
// and add_special_tokens).
func (c *client) tokenize(ctx context.Context, text string, llama bool) (int, error) {
	var body any = map[string]any{"model": c.model, "prompt": text, "add_special_tokens": true}
	if llama {
		body = map[string]any{"content": text, "add_special": true}
	}
	b, status, err := c.sizingPost(ctx, "/tokenize", body)
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("%w: POST /tokenize: HTTP %d: %s", errNoTokenize, status, c.scrub(strings.TrimSpace(string(b))))
	}
	n, err := parseTokenizeCount(b)
	if err != nil {
		return 0, fmt.Errorf("%w: POST /tokenize: %v", errNoTokenize, err)
	}
	return n, nil
}

// parseTokenizeCount reads a /tokenize response: vLLM's and SGLang's {"count": N, "tokens":
// [...], "max_model_len": M}, llama.cpp's {"tokens": [ids]} or {"tokens": [{"id", "piece"}]}.
func parseTokenizeCount(b []byte) (int, error) {
	var r struct {
		Count  *int              `json:"count"`
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("not a tokenize response: %s", safetext.Quote(err.Error(), 120))
	}
	switch {
	case r.Count != nil && *r.Count >= 0 && *r.Count <= traces.MaxTokens:
		return *r.Count, nil
	case r.Count != nil:
		return 0, fmt.Errorf("count %d is out of range", *r.Count)
	case r.Tokens != nil:
		return len(r.Tokens), nil
	}
	return 0, errors.New(`the response has neither "count" nor "tokens"`)
}

// probe sends one request of text with max_tokens 1, not streamed, on the API the run uses
// (chat with --api chat, else completions), and returns its usage.prompt_tokens.
func (c *client) probe(ctx context.Context, text string) (int, error) {
	body := map[string]any{"model": c.model, "max_tokens": 1, "stream": false, "temperature": 0}
	path := "/v1/completions"
	if c.target.API == "chat" {
		path = "/v1/chat/completions"
		body["messages"] = []map[string]string{{"role": "user", "content": text}}
	} else {
		body["prompt"] = text
	}
	b, status, err := c.sizingPost(ctx, path, body)
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("probe request POST %s: HTTP %d: %s", path, status, c.scrub(strings.TrimSpace(string(b))))
	}
	var f chunkFields
	if err := parseWhole("", b, &f); err != nil {
		return 0, fmt.Errorf("probe request POST %s: %v", path, err)
	}
	if f.promptTokens < 0 || f.usageBad != "" {
		return 0, fmt.Errorf("probe request POST %s: the response has no usable usage.prompt_tokens", path)
	}
	return int(f.promptTokens), nil
}

// sizingPost posts body as JSON to path and returns the response body (at most
// maxTokenizeBody bytes) and status.
func (c *client) sizingPost(ctx context.Context, path string, body any) ([]byte, int, error) {
	d := sizingCallTimeout
	if t := c.target.Timeouts.Total; t > 0 && t < d {
		d = t
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path+c.query, bytes.NewReader(payload))
	if err != nil {
		return nil, 0, errors.New(c.scrub(err.Error()))
	}
	c.header(req.Header)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("POST %s: %s", path, c.scrub(err.Error()))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenizeBody+1))
	if err != nil {
		return nil, 0, fmt.Errorf("POST %s: reading the response: %s", path, c.scrub(err.Error()))
	}
	if len(b) > maxTokenizeBody {
		return nil, 0, fmt.Errorf("POST %s: the response is longer than %d bytes", path, maxTokenizeBody)
	}
	return b, resp.StatusCode, nil
}
