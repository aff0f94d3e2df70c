package refengine

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/llmbench/llmbench/refengine/perf"
	"github.com/llmbench/llmbench/tokenizer"
)

// SimRequest is one request of a simulated trace.
type SimRequest struct {
	// ID keys the request's timeline (Timeline.ID).
	ID string
	// Arrival is the offset from the trace start at which the request reaches the engine.
	Arrival time.Duration
	// Prompt is the prompt text; when empty, PromptTokens gives the prompt length and the
	// prompt's content is unique to the request except for its HashIDs blocks.
	Prompt       string
	PromptTokens int
	// HashIDs are shared-prefix block ids: entry j stands for prompt tokens
	// [j·HashIDTokens, (j+1)·HashIDTokens), so requests with equal leading HashIDs share
	// that prefix in the prefix cache.
	HashIDs []int64
	// MaxTokens is the output length (>= 1); MinTokens and IgnoreEOS matter only with the
	// early-eos fault.
	MaxTokens int
	MinTokens int
	IgnoreEOS bool
	// Seed and Temperature select the output text (see the package doc); Temperature 0 is
	// greedy.
	Seed        *int64
	Temperature float64
	// Class is the request's scenario class (traces.Request.Class); it selects the n-gram
	// speculative method's repetition (Config.SpecRepetition).
	Class string

	// Images are the prompt's images, priced by the model's vision rule as over HTTP
	// (images.go): their tokens join the prompt after its text.
	Images []SimImage

	// Answers (see the package doc, "Answers"). Tools, ToolChoice and ResponseFormat are
	// the chat request's fields as JSON (nil: absent); with them, or a question in Prompt,
	// the request gets an answer, whose length replaces MaxTokens as it would over HTTP
	// (give IgnoreEOS false and MinTokens 0 to let it end). Output asks for the request's
	// output in SimResult.Outputs; leave it false where nobody reads the text, so that no
	// text is made.
	Tools, ToolChoice, ResponseFormat []byte
	Output                            bool
	// AnswerText, when set, is the text answers are read from instead of Prompt (for a chat:
	// each message's content followed by a newline, as the HTTP engine reads it).
	AnswerText string

	// Model names the LoRA adapter the request uses (Config.LoRAs; issue 38); "" or the
	// served model name is the base model. Any other name is an error wrapping
	// ErrUnknownModel, as the HTTP engine answers it 404.
	Model string
}

// ErrUnknownModel is wrapped by Simulate's error for a request naming a model the engine does
// not serve (neither the base model nor one of Config.LoRAs).
var ErrUnknownModel = errors.New("model not served")

// SimImage is one image of a simulated prompt: its size and a key for the prefix cache (the
// same key is the same image).
type SimImage struct {
	Width, Height int
	Key           uint64
}

// SimStats are the engine's counters over a simulation.
type SimStats struct {
	Steps            int64
	BusyTime         time.Duration // simulated time spent in steps
	Makespan         time.Duration // first arrival to last finish
	Preemptions      int64
	PreemptedReqs    int64
	PrefixQueries    int64 // prompt tokens looked up in the prefix cache
	PrefixHits       int64 // prompt tokens found
	SpecPasses       int64
	SpecDraftTokens  int64
	SpecAccepted     int64
	PromptTokens     int64
	GenerationTokens int64
	ComputedTokens   int64 // including recomputation after preemption
	MaxRunning       int
	MaxBlocksUsed    int
	NumBlocks        int
	PrefixEvictions  int64

	// LoRA adapters (issue 38): adapters copied into a slot, adapters evicted to make room,
	// and the time the copies took.
	LoRALoads     int64
	LoRAEvictions int64
	LoRALoadTime  time.Duration
	// Energy (issue 39; power.go): the GPUs' modelled energy over the makespan (J) and how many
	// GPUs drew it, from the figures EnergySource names; EnergyKnown is false when the GPU
	// profile has no power figures.
	EnergyJ      float64
	EnergyGPUs   int
	EnergyKnown  bool
	EnergySource string
}

// SimResult is the outcome of Simulate.
type SimResult struct {
	// Timelines holds one timeline per request, in input order. Their Epoch is the Unix
	// epoch and Scale 1: wall time = Epoch + offset.
	Timelines []Timeline
	// Outputs holds, when any request asked for it (SimRequest.Output), each request's
	// output in input order (the zero Output for those that did not ask); nil otherwise.
	Outputs []Output
	Stats   SimStats
	Info    Info
}

// Simulate runs reqs through the same scheduler and step-time model as the HTTP engine on a
// virtual clock: no HTTP, no goroutines, no sleeping. It is deterministic for a given input and
// Config (Config.Seed seeds unseeded sampling; HTTP-level faults do not apply, early-eos does).
func Simulate(reqs []SimRequest, cfg Config) (*SimResult, error) {
	res, err := SimulateCluster(reqs, cfg, ClusterOptions{})
	if err != nil {
		return nil, err
	}
	return &res.SimResult, nil
}

// prepare checks reqs against the resolved engine and builds their sequences and timelines,
// and the output plans of the requests that get an answer or asked for their output.
func prepare(reqs []SimRequest, r *resolved, res *SimResult) ([]seq, []*outPlan, error) {
	seqs := make([]seq, len(reqs))
	p := newPreparer(r)
	var plans []*outPlan // per request, only where an answer or an output is wanted
	for i := range reqs {
		op, err := p.prepareOne(&seqs[i], &res.Timelines[i], i, &reqs[i])
		if err != nil {
			return nil, nil, err
		}
		if op != nil {
			if plans == nil {
				plans = make([]*outPlan, len(reqs))
			}
			plans[i] = op
		}
	}
	return seqs, plans, nil
}

// preparer turns SimRequests into sequences for one resolved engine (prepare, Simulation).
type preparer struct {
	r      *resolved
	tok    tokenizer.Reference
	vision perf.Vision
	errs   *errorModel
	epoch  time.Time
}

func newPreparer(r *resolved) *preparer {
	return &preparer{r: r, vision: perf.VisionOf(r.model), errs: newErrorModel(r.Quality, r.WeightDtype, r.Seed), epoch: time.Unix(0, 0).UTC()}
}

// prepareOne validates request i (q) and sets up its sequence s and timeline tl; it returns the
// request's output plan when it gets an answer or asked for its output (nil otherwise).
func (p *preparer) prepareOne(s *seq, tl *Timeline, i int, q *SimRequest) (*outPlan, error) {
	var w queued
	op, err := p.check(&w, i, q)
	if err != nil {
		return nil, err
	}
	p.materialize(s, tl, &w)
	return op, nil
}

// check validates request i (q) and sets w to what its sequence is made from (materialize);
// it returns the request's output plan when it gets an answer or asked for its output (nil
// otherwise).
func (p *preparer) check(w *queued, i int, q *SimRequest) (*outPlan, error) {
	r, tok, vision := p.r, &p.tok, p.vision
	if q.Arrival < 0 {
		return nil, fmt.Errorf("refengine: request %d (%s): arrival %v is negative", i, q.ID, q.Arrival)
	}
	var ids []int
	promptTokens := q.PromptTokens
	var promptHash uint64
	if q.Prompt != "" {
		ids = tok.Encode(q.Prompt)
		promptTokens = len(ids)
		promptHash = hashString(fnvOffset, q.Prompt)
	} else {
		promptHash = hashString(hashUint(fnvOffset, uint64(q.PromptTokens)), q.ID)
		for _, h := range q.HashIDs {
			promptHash = hashUint(promptHash, uint64(h))
		}
	}
	imageTokens := 0
	for _, im := range q.Images {
		n := vision.ImageTokens(im.Width, im.Height)
		if n == 0 {
			return nil, fmt.Errorf("refengine: request %d (%s): image of %dx%d pixels; give both sides >= 1", i, q.ID, im.Width, im.Height)
		}
		if ids != nil {
			for k := 0; k < n; k++ {
				ids = append(ids, int(hashUint(im.Key, uint64(k))&0x7fffffff))
			}
		}
		promptHash = hashUint(promptHash, im.Key)
		imageTokens += n
	}
	promptTokens += imageTokens
	if err := checkLengths(i, q, promptTokens, r.maxModelLen); err != nil {
		return nil, err
	}
	lora, ok := r.lora.lookup(q.Model, r.ServedModelName)
	if !ok {
		return nil, fmt.Errorf("refengine: request %d (%s): model %q is neither the base model %q nor one of its adapters %v: %w",
			i, q.ID, q.Model, r.ServedModelName, r.lora.names(), ErrUnknownModel)
	}
	if r.maxModelLen > math.MaxInt32 { // the lengths below are at most it, held in 32 bits
		return nil, fmt.Errorf("refengine: request %d (%s): the max model length %d is beyond 2^31 tokens", i, q.ID, r.maxModelLen)
	}
	*w = queued{id: q.ID, arrival: q.Arrival, pos: i, promptTokens: int32(promptTokens), encodeTokens: int32(imageTokens),
		maxTokens: int32(q.MaxTokens), promptHash: promptHash, rho: r.repetitionFor(q.Class), lora: int32(lora),
		outputSeed: outputBase(promptHash, q.Temperature, q.Seed, tokenizer.Mix(r.Seed^tokenizer.Mix(uint64(i))))}
	target := q.MaxTokens
	if r.Faults.EarlyEOS > 0 {
		plan := r.Faults.plan(hashString(fnvOffset, q.ID), q.Arrival)
		target = plan.target(q.MaxTokens, q.MinTokens, q.IgnoreEOS)
	}
	var out *outPlan // the answer or output plan, when there is one
	if q.Output || q.AnswerText != "" || mayAnswer(q.Prompt, q.Tools != nil, q.ResponseFormat != nil) {
		op, err := simAnswer(q, promptTokens, w.outputSeed, p.errs, r.ReasoningFraction)
		if err != nil {
			return nil, fmt.Errorf("refengine: request %d (%s): %s", i, q.ID, err.message)
		}
		target = op.target(q.MaxTokens, q.MinTokens, q.IgnoreEOS, target)
		out = op
	}
	w.target = int32(target)
	if !r.DisablePrefixCaching {
		if ids != nil {
			// The prompt's text is not kept: its blocks are hashed now.
			w.blocks = &queuedBlocks{hashes: blockHashes(ids, q.HashIDs, promptTokens, r.BlockSize, r.HashIDTokens, promptHash)}
		} else if len(q.HashIDs) > 0 {
			w.blocks = &queuedBlocks{hashIDs: q.HashIDs} // hashed when the sequence is made
		}
	}
	seed := promptHash
	if q.Seed != nil {
		seed = uint64(*q.Seed)
	}
	w.rng = tokenizer.Mix(seed ^ 0x5eed5eed5eed5eed)
	return out, nil
}

// checkLengths checks request i's prompt (promptTokens, images included) and output lengths.
func checkLengths(i int, q *SimRequest, promptTokens, maxModelLen int) error {
	switch {
	case promptTokens < 1:
		return fmt.Errorf("refengine: request %d (%s): the prompt is empty; give Prompt or PromptTokens >= 1", i, q.ID)
	case q.MaxTokens < 1:
		return fmt.Errorf("refengine: request %d (%s): MaxTokens %d must be >= 1", i, q.ID, q.MaxTokens)
	case promptTokens > maxModelLen || q.MaxTokens > maxModelLen-promptTokens: // no sum: it could wrap
		return fmt.Errorf("refengine: request %d (%s): %d prompt + %d output tokens exceed the max model length %d (the model's context, capped by the KV cache); shorten it or give more KV memory: %w",
			i, q.ID, promptTokens, q.MaxTokens, maxModelLen, ErrTooLong)
	case q.MinTokens < 0 || q.MinTokens > q.MaxTokens:
		return fmt.Errorf("refengine: request %d (%s): MinTokens %d must be between 0 and MaxTokens %d", i, q.ID, q.MinTokens, q.MaxTokens)
	}
	return nil
}

// materialize sets up the sequence s and timeline tl of the checked request w.
func (p *preparer) materialize(s *seq, tl *Timeline, w *queued) {
	r := p.r
	*tl = Timeline{ID: w.id, Epoch: p.epoch, Scale: 1, Arrival: w.arrival, FirstScheduled: -1, Finish: -1,
		PromptTokens: int(w.promptTokens), MaxTokens: int(w.maxTokens), OutputSeed: w.outputSeed}
	*s = seq{tl: tl, pos: w.pos, promptTokens: int(w.promptTokens), encodeTokens: int(w.encodeTokens),
		target: int(w.target), rng: w.rng, rho: w.rho, lora: int(w.lora)}
	var hashIDs []int64
	if w.blocks != nil {
		s.hashes, hashIDs = w.blocks.hashes, w.blocks.hashIDs
	}
	if !r.DisablePrefixCaching && s.hashes == nil {
		s.hashes = blockHashes(nil, hashIDs, int(w.promptTokens), r.BlockSize, r.HashIDTokens, w.promptHash)
	}
}

// fillOutputs sets res.Outputs for the requests that asked for their output (SimRequest.Output),
// once their timelines are complete.
func fillOutputs(reqs []SimRequest, plans []*outPlan, seqs []seq, r *resolved, res *SimResult) {
	for i, op := range plans {
		if op != nil && reqs[i].Output {
			if res.Outputs == nil {
				res.Outputs = make([]Output, len(reqs))
			}
			tl := &res.Timelines[i]
			if op.ans == nil {
				op.reasoning = int(r.ReasoningFraction * float64(seqs[i].target))
			}
			op.reasoning = min(op.reasoning, tl.OutputTokens)
			res.Outputs[i] = op.output(tl.OutputTokens, tl.FinishReason, true)
		}
	}
}

// simAnswer plans the output of a simulated request: its answer, read from Prompt and the
// structured fields validated as the HTTP engine validates them.
func simAnswer(q *SimRequest, promptTokens int, base uint64, m *errorModel, frac float64) (*outPlan, *apiError) {
	var r request
	r.chat = true
	wr := wireRequest{Tools: q.Tools, ToolChoice: q.ToolChoice, ResponseFormat: q.ResponseFormat}
	if err := r.decodeStructured(&wr); err != nil {
		return nil, err
	}
	p := &outPlan{base: base}
	text := q.Prompt
	if q.AnswerText != "" {
		text = q.AnswerText
	}
	if !mayAnswer(text, r.tools != nil, r.format != nil) {
		return p, nil
	}
	in := &answerInput{text: text, chat: true, tools: r.tools, toolChoice: r.toolChoice, format: r.format,
		promptToks: promptTokens, maxTokens: q.MaxTokens, temperature: q.Temperature, key: base}
	planAnswer(p, in, m, frac)
	return p, nil
}
