package loadgen

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/tokenizer"
)

// Prompt sizing: how a prompt synthesized from a trace's input_tokens is made to be that many
// tokens as the target counts them (Options.PromptSizing, docs/inputs.md).
//
// The reference tokenizer's words are one token each only for the reference engine; on a
// real model's tokenizer they are two to three. Against an outside server llmbench therefore
// learns what its words cost there: SizingServer asks the server's /tokenize (vLLM, SGLang,
// llama.cpp) for the cost of each word of a fixed vocabulary of SizingVocab words, the
// tokens it adds to every input, and checks the sum on whole sample texts; SizingCalibrate,
// for a server without /tokenize, sends probe requests of two lengths and reads their
// usage.prompt_tokens, which gives a mean cost per word and the fixed part. Prompts are then
// drawn from that vocabulary (workloads.NewPrompterWords) and fitted to the trace's length
// minus the fixed part the server adds (special tokens, and for chat the template), measured
// by one probe request. The server's usage.prompt_tokens in every record then says whether
// it worked (metrics.InputCheck).
const (
	SizingTokenizer = "tokenizer" // fit with Options.Tokenizer (the default on the reference engine)
	SizingServer    = "server"    // word costs from the server's /tokenize
	SizingCalibrate = "calibrate" // mean word cost from probe requests' usage.prompt_tokens
	SizingAuto      = "auto"      // server, else calibrate
)

// SizingModes lists the values Options.PromptSizing accepts ("" is SizingTokenizer).
func SizingModes() []string {
	return []string{SizingAuto, SizingServer, SizingCalibrate, SizingTokenizer}
}

// SizingVocab is how many distinct words prompts are drawn from when they are sized on the
// server: each costs one /tokenize call at the start of a run.
const SizingVocab = 512

// Sizer is a measured prompt sizing: the words prompts are drawn from, what each costs on the
// target, and the tokens the target adds to every prompt. Measure it once (MeasureSizing) and
// pass it to every run against the same target (Options.Sizer). Safe for concurrent use.
type Sizer struct {
	// Method is SizingServer or SizingCalibrate; Detail says in words what was measured.
	// SizingTokenizer is auto's fallback when the server could not be measured: prompts are
	// then fitted with Options.Tokenizer, and Detail says why.
	Method string
	Detail string
	// Offset is the tokens the target adds to a prompt's text (special tokens, chat
	// template); a synthesized prompt's text is fitted to input_tokens - Offset.
	Offset int
	// TokensPerWord is the mean cost of a vocabulary word on the target.
	TokensPerWord float64
	words         []string
	costs         *wordCosts
}

// String is Method and Detail, for the run's output.
func (s *Sizer) String() string {
	if s == nil {
		return ""
	}
	return s.Method + ": " + s.Detail
}

// sizingWords returns the fixed vocabulary of n distinct reference words prompts are drawn
// from under a Sizer.
func sizingWords(n int) []string {
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	for i := uint64(0); len(out) < n; i++ {
		w := tokenizer.Word(tokenizer.Mix(0x73697a696e67 ^ i))
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// unknownPiece is what wordCosts counts for a piece it has no cost for: far more than any
// target, so prompt fitting never picks a filler it cannot count.
const unknownPiece = 1 << 30

// wordCosts counts text made of the vocabulary's words by their measured costs on the target
// (without the fixed part the target adds to every input). It is the tokenizer prompt
// synthesis fits with under a Sizer, and knows nothing else.
type wordCosts struct {
	cost map[string]float64 // per word (a calibrated sizing gives every word the mean)
}

// Name implements tokenizer.Tokenizer.
func (w *wordCosts) Name() string { return "sized" }

// Count implements tokenizer.Tokenizer: the rounded sum of the pieces' costs, or
// unknownPiece when a piece is not in the vocabulary.
func (w *wordCosts) Count(text string) int {
	sum := 0.0
	for i := 0; i < len(text); {
		j := nextWord(text, i)
		c, ok := w.cost[text[i:j]]
		if !ok {
			return unknownPiece
		}
		sum += c
		i = j
	}
	return int(math.Round(sum))
}

// Encode implements tokenizer.Tokenizer with pseudo-ids: each word's vocabulary position,
// repeated once per token it costs (rounded). This tokenizer only sizes prompts.
func (w *wordCosts) Encode(text string) []int {
	var ids []int
	for i := 0; i < len(text); {
		j := nextWord(text, i)
		n := int(math.Round(w.cost[text[i:j]]))
		for range n {
			ids = append(ids, i)
		}
		i = j
	}
	return ids
}

// nextWord returns the end of the word starting at i: the vocabulary's words are a space and
// ASCII letters.
func nextWord(s string, i int) int {
	j := i + 1
	for j < len(s) && s[j] != ' ' {
		j++
	}
	return j
}

// newSizer builds a Sizer over words with their measured costs.
func newSizer(method, detail string, words []string, cost []float64, offset int) *Sizer {
	wc := &wordCosts{cost: make(map[string]float64, len(words))}
	sum := 0.0
	for i, w := range words {
		wc.cost[w] = cost[i]
		sum += cost[i]
	}
	s := &Sizer{Method: method, Detail: detail, Offset: offset, words: words, costs: wc}
	if len(words) > 0 {
		s.TokensPerWord = sum / float64(len(words))
	}
	return s
}

// measured reports whether s sizes prompts itself (not auto's fallback to the tokenizer).
func (s *Sizer) measured() bool { return s != nil && s.costs != nil }

// target returns the text length, in the target's tokens, of a prompt of n tokens.
func (s *Sizer) target(n int) int { return max(n-s.Offset, 1) }

// modalExtra returns the most common value of xs (the smallest among ties).
func modalExtra(xs []int) int {
	counts := map[int]int{}
	for _, x := range xs {
		counts[x]++
	}
	keys := make([]int, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	best := keys[0]
	for _, k := range keys {
		if counts[k] > counts[best] {
			best = k
		}
	}
	return best
}

// describeVerify says how the word costs held on whole sample texts.
func describeVerify(errs []int) string {
	worst := 0
	for _, e := range errs {
		if abs(e) > abs(worst) {
			worst = e
		}
	}
	if worst == 0 {
		return "exact on " + strconv.Itoa(len(errs)) + " sample texts"
	}
	return fmt.Sprintf("off by up to %+d tokens on %d sample texts", worst, len(errs))
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// joinWords concatenates words (each with its leading space).
func joinWords(words []string) string { return strings.Join(words, "") }
