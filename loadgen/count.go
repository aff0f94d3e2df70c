package loadgen

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/tokenizer"
)

// Token accounting of one response. The rules (see the package doc):
//
//   - The server's usage is the token count whenever the response reports one anywhere: a
//     final chunk with empty choices, usage on the last chunk that still has a choice,
//     cumulative per-chunk usage, or a non-streaming body. The last completion_tokens
//     reported is the output total, prompt_tokens the input total.
//   - Per-chunk attribution: from the per-chunk usage deltas when every content chunk had one
//     and they sum to the total. Else every content chunk carries at least one token (a
//     server sends text only for a token it generated), so a total equal to the number of
//     content chunks is one token each, exactly, whatever a tokenizer makes of each chunk's
//     text (metrics.TokensOnePerChunk: llama.cpp, TGI and Ollama stream one event per
//     token); a larger total is shared in proportion to the tokenizer's counts (evenly
//     without a tokenizer), a chunk whose share would fall below one getting one (split),
//     and a smaller one (a server that splits a token's text over events) follows the
//     tokenizer's counts rescaled. Shares use the largest-remainder rule, so the chunks sum
//     to the total exactly. Without server usage the total is the tokenizer's count of the whole output
//     (at least one per chunk), split the same way; without either, one per chunk.
//   - A usage count that is not a plausible token count is rejected (the whole usage of the
//     response is then ignored, Record.UsageRejected says why): negative, fractional, above
//     MaxUsageCount, not a number, or completion_tokens above max_tokens plus usageMargin.
//   - The client's own tokenizer count is kept in Record.ClientOutputTokens, so a summary can
//     compare it with the server's. It counts the whole output as one text (wholeText), not
//     chunk by chunk: a sum of per-chunk counts differs from the text's count wherever the
//     tokenizer would merge across a chunk boundary or split one token's text, which made
//     nearly every request look mismatched on a one-token-per-event server (issue 31).

// usageMargin is how far completion_tokens may exceed max_tokens before the usage is
// rejected: 16 tokens plus a quarter, which covers servers that count an end-of-sequence or
// template token and is far below the orders of magnitude of a broken counter.
func usageMargin(maxTokens int) int64 { return 16 + int64(maxTokens)/4 }

// countBufs pools the per-chunk scratch of counters.
var countBufs = sync.Pool{New: func() any { return new(countScratch) }}

type countScratch struct {
	own []int32 // each content chunk's own count
	idx []int32 // rescaling order
}

// textBufs pools the buffers that keep a stream's output text for the client tokenizer's
// whole count (wholeText); one that grew past keepText is dropped.
var textBufs = sync.Pool{New: func() any { return new([]byte) }}

const keepText = 64 << 10

// counter accumulates one response's token accounting.
type counter struct {
	c    *client
	rec  *metrics.Record
	hash uint64
	out  []byte
	keep bool
	// cap captures the answer text and tool calls for grading (nil: not kept).
	cap *capture
	// natural: the request was sent without ignore_eos (traces.Request.NaturalEnd), so a
	// short output is no failure.
	natural bool
	// textLen is the bytes of generated text so far (text past textLimit is not kept).
	textLen int
	// text keeps the output for the client tokenizer's whole count when out does not (a
	// tokenizer is set and the text is not kept for the caller); from textBufs.
	text *[]byte

	scratch   *countScratch
	packed    *packedChunks // the content chunks while the stream is in flight
	prevCT    int64         // largest cumulative completion_tokens seen
	lastCT    int64         // last completion_tokens seen (-1: none)
	serverIn  int64
	serverRsn int64 // reasoning_tokens (-1: none)
	cached    int64 // prompt tokens read from the prefix cache (-1: none reported)
	cacheW    int64 // Messages' cache_creation_input_tokens (-1: none)
	cacheSrc  string
	spec      specFields // speculative counts reported (specfields.go)
	rejected  string
	pending   int64 // usage tokens from chunks without text, owed to the next content chunk
	byUsage   int   // content chunks that carried a usage delta
	ownSum    int64
	answer    bool // a chunk of the answer has arrived
	textSeen  bool
	unknown   bool // no count at all (non-streaming, no usage, no tokenizer)
	whole     bool // a non-streaming body (onWhole)
	started   bool
}

func (n *counter) init() {
	if !n.started {
		n.started = true
		n.lastCT, n.serverIn, n.serverRsn, n.cached, n.cacheW = -1, -1, -1, -1, -1
		n.spec.reset()
	}
}

// noteUsage takes the usage of one parsed object; it returns the completion_tokens delta
// over the previous report (-1 when the object reported none).
func (n *counter) noteUsage(f *chunkFields) int64 {
	if f.usageBad != "" && n.rejected == "" {
		n.rejected = f.usageBad
	}
	n.noteSpec(f)
	if f.cacheSrc != "" {
		n.cacheSrc = f.cacheSrc
		if f.cachedTokens >= 0 {
			n.cached = f.cachedTokens
		}
		if f.cacheWrite >= 0 {
			n.cacheW = f.cacheWrite
		}
	}
	if !f.usage || (f.promptTokens == 0 && f.completionTokens == 0) {
		// A usage of zero prompt and zero completion tokens counts nothing: Ollama's
		// /v1/completions (v0.6.8) puts one on every content chunk and the real counts in a
		// final chunk. Read as cumulative per-chunk usage it would give every chunk zero
		// tokens and the last one all of them.
		return -1
	}
	if f.promptTokens >= 0 {
		n.serverIn = f.promptTokens
	}
	if f.reasoningTokens >= 0 {
		n.serverRsn = f.reasoningTokens
	}
	if f.completionTokens < 0 {
		return -1
	}
	n.lastCT = f.completionTokens
	delta := max(f.completionTokens-n.prevCT, 0) // a server count going back adds nothing
	n.prevCT = max(n.prevCT, f.completionTokens)
	return delta
}

// own is the client's count of one chunk's text: the tokenizer's (at least one), else one.
func (n *counter) own(text []byte) int64 {
	if n.c.tok == nil || len(text) == 0 {
		return 1
	}
	// text is the read buffer, reused for the next event: CountChunkBytes copies it for any
	// tokenizer that might keep it.
	return max(int64(tokenizer.CountChunkBytes(n.c.tok, text)), 1)
}

// onChunk accounts one parsed event that arrived at t.
func (n *counter) onChunk(f *chunkFields, t int64) {
	perfgateSlowdown() // empty unless built with -tags perfgate_slow (perfgate_slow.go)
	n.init()
	rec := n.rec
	if f.id != nil && rec.ResponseID == "" {
		rec.ResponseID = string(clip(f.id, maxRawID))
	}
	delta := n.noteUsage(f)
	if len(f.text) == 0 {
		// A role prelude, a finish marker or the final usage chunk: tokens it reports
		// belong to content chunks.
		if delta > 0 {
			n.pending += delta
		}
		return
	}
	if n.packed == nil {
		n.packed = packedPool.Get().(*packedChunks)
	}
	own := min(n.own(f.text), maxChunkTokens)
	n.ownSum += own
	tokens := own
	if delta >= 0 {
		tokens = min(delta+n.pending, maxChunkTokens)
		n.pending = 0
		n.byUsage++
	}
	if !n.textSeen {
		n.textSeen = true
		rec.FirstToken = t
	}
	switch {
	case f.answer:
		if !n.answer {
			n.answer = true
			rec.FirstAnswer = t
		}
	case f.reasoningBytes > 0 && !n.answer:
		rec.ReasoningChunks++
	}
	n.hash = fnvAdd(n.hash, f.text)
	n.textLen += len(f.text)
	n.keepText(f.text)
	n.packed.add(t, tokens, own)
}

// countTextLimit bounds the output text a stream keeps only for the tokenizer's whole count:
// 32 bytes per requested token plus 16 KB, far above what a model writes per token and small
// enough that a server sending megabytes per stream cannot make every open stream hold them.
func countTextLimit(maxTokens int) int { return 32*max(maxTokens, 0) + 16<<10 }

// keepText appends a chunk's text to out (kept for the caller, up to textLimit bytes of
// output) or, with a tokenizer, to text (kept for the whole count, up to countTextLimit).
func (n *counter) keepText(b []byte) {
	switch {
	case n.keep:
		if n.textLen <= textLimit(n.rec.RequestedTokens) {
			n.out = append(n.out, b...)
		}
	case n.c.tok != nil:
		if n.textLen > countTextLimit(n.rec.RequestedTokens) {
			n.releaseText()
			return
		}
		if n.text == nil {
			n.text = textBufs.Get().(*[]byte)
		}
		*n.text = append(*n.text, b...)
	}
}

// wholeText is the client tokenizer's count of the whole output as one continuation of the
// prompt (see CountChunk), or the sum of the chunks' own counts when the output outgrew what
// is kept. It hands the text buffer back.
func (n *counter) wholeText() int64 {
	var b []byte
	switch {
	case n.keep && n.textLen > textLimit(n.rec.RequestedTokens),
		!n.keep && n.textLen > countTextLimit(n.rec.RequestedTokens):
		n.releaseText()
		return n.ownSum
	case n.keep:
		b = n.out
	case n.text != nil:
		b = *n.text
	}
	c := int64(tokenizer.CountChunkBytes(n.c.tok, b))
	n.releaseText()
	return c
}

func (n *counter) releaseText() {
	if n.text == nil {
		return
	}
	if cap(*n.text) <= keepText {
		*n.text = (*n.text)[:0]
		textBufs.Put(n.text)
	}
	n.text = nil
}

// chunks is the number of content chunks so far.
func (n *counter) chunks() int {
	if n.packed == nil {
		return len(n.rec.Chunks)
	}
	return n.packed.n
}

// unpack moves the packed chunks into the Record and their own counts into the scratch.
func (n *counter) unpack() {
	if n.packed == nil {
		return
	}
	n.scratch = countBufs.Get().(*countScratch)
	n.rec.Chunks, n.scratch.own = n.packed.unpack(n.rec.Chunks[:0], n.scratch.own[:0])
	n.packed.release()
	n.packed = nil
}

// onWhole accounts a non-streaming response.
func (n *counter) onWhole(f *chunkFields) {
	n.init()
	n.whole = true
	rec := n.rec
	if f.id != nil {
		rec.ResponseID = string(clip(f.id, maxRawID))
	}
	n.noteUsage(f)
	if len(f.text) == 0 {
		return
	}
	n.textSeen = true
	n.answer = f.answer
	n.hash = fnvAdd(n.hash, f.text)
	if n.keep {
		n.out = append(n.out, f.text...)
	}
	if n.c.tok != nil {
		n.ownSum = int64(tokenizer.CountChunkBytes(n.c.tok, f.text))
	} else {
		n.unknown = true
	}
}

// serverTotals validates the usage seen and returns the output total (-1: none usable).
func (n *counter) serverTotals() int64 {
	rec := n.rec
	n.settleSpec(rec) // specfields.go
	total := n.lastCT
	if n.rejected == "" && total >= 0 && rec.RequestedTokens > 0 {
		if lim := int64(rec.RequestedTokens) + usageMargin(rec.RequestedTokens); total > lim {
			n.rejected = fmt.Sprintf("usage.completion_tokens %d exceeds max_tokens %d plus a margin of %d", total, rec.RequestedTokens, usageMargin(rec.RequestedTokens))
		}
	}
	if n.rejected == "" && n.serverRsn > total && total >= 0 {
		n.rejected = fmt.Sprintf("usage reasoning_tokens %d exceeds completion_tokens %d", n.serverRsn, total)
	}
	if n.rejected != "" {
		rec.UsageRejected = metrics.TruncateError(n.rejected)
		rec.ServerInputTokens, rec.ServerOutputTokens = -1, -1
		n.serverRsn = -1
		return -1
	}
	rec.ServerInputTokens, rec.ServerOutputTokens = int(n.serverIn), int(total)
	if n.cacheSrc != "" && (n.serverIn < 0 || n.cached <= n.serverIn) { // more cached than the prompt: a defect, not kept
		rec.CacheSource = n.cacheSrc
		rec.CachedInputTokens, rec.CacheWriteTokens = int(max(n.cached, 0)), int(max(n.cacheW, 0))
	}
	return total
}

// finish settles the counts once the response is complete or has failed.
func (n *counter) finish() {
	n.init()
	n.unpack()
	rec := n.rec
	total := n.serverTotals()
	client := int64(-1)
	if n.c.tok != nil && n.textSeen {
		client = n.ownSum // a non-streaming body: already the whole text's count
		if !n.whole {
			client = n.wholeText()
		}
		rec.ClientOutputTokens = int(client)
	}
	n.releaseText()
	n.attribute(total, client)
	switch {
	case total >= 0:
		rec.TokenSource = metrics.TokensFromUsage
	case n.c.tok != nil:
		rec.TokenSource = metrics.TokensFromTokenizer
	default:
		rec.TokenSource = metrics.TokensFromChunks
	}
	if total >= 0 {
		n.unknown = false
	}
	switch {
	case n.serverRsn >= 0:
		rec.ReasoningTokens = int(n.serverRsn)
	default:
		sum := 0
		for _, c := range rec.Chunks[:min(rec.ReasoningChunks, len(rec.Chunks))] {
			sum += int(c.Tokens)
		}
		rec.ReasoningTokens = sum
	}
	if n.textSeen {
		rec.OutputHash = hashString(n.hash)
	}
	if rec.ResponseID != "" {
		rec.ResponseID = safetext.Clip(safetext.Escape(n.c.redact.String(rec.ResponseID), 4*maxResponseID), maxResponseID-len("…"))
	}
	if n.scratch != nil {
		countBufs.Put(n.scratch)
		n.scratch = nil
	}
}

// attribute sets OutputTokens and the chunks' counts from the server's total (-1: none) and
// the client tokenizer's whole count (-1: none), by the rules at the top of this file.
func (n *counter) attribute(total, client int64) {
	rec := n.rec
	chunks := rec.Chunks
	var own []int32
	if n.scratch != nil {
		own = n.scratch.own
	}
	switch {
	case len(chunks) == 0 && !n.whole:
		// A stream without content: no chunk carries the tokens a server may claim (the
		// request fails as empty).
		rec.OutputTokens = 0
	case len(chunks) == 0:
		// A non-streaming body.
		switch {
		case total >= 0:
			rec.OutputTokens = int(total)
		case !n.unknown:
			rec.OutputTokens = int(n.ownSum)
		}
	case total >= 0 && n.byUsage == len(chunks) && n.deltaSum()+n.pending == total:
		last := &chunks[len(chunks)-1]
		last.Tokens += int32(n.pending)
		n.pending = 0
		rec.OutputTokens = int(total)
		rec.TokenAttribution = metrics.TokensFromUsage
	case total >= 0:
		rec.TokenAttribution = n.split(chunks, own, total)
		rec.OutputTokens = int(total)
	case client >= 0:
		// No usage: the tokenizer's count of the whole text, at least one per chunk.
		total = max(client, int64(len(chunks)))
		n.split(chunks, own, total)
		rec.OutputTokens = int(total)
		rec.TokenAttribution = metrics.TokensFromTokenizer
	default:
		for i := range chunks {
			chunks[i].Tokens = 1
		}
		rec.OutputTokens = len(chunks)
		rec.TokenAttribution = metrics.TokensFromChunks
	}
}

// split sets the chunks' counts to sum to total in proportion to their own counts (the
// tokenizer's, else one each, never below one) and returns how it split them. Every content
// chunk carries at least one token, so a chunk whose share would fall below one gets one and
// the others share the rest (with total equal to the number of chunks: one each, exactly).
// With fewer tokens than chunks (a server that splits a token's text over events, or counts
// differently) the own counts are rescaled as they are. own is overwritten.
func (n *counter) split(chunks []metrics.Chunk, own []int32, total int64) string {
	how := metrics.TokensFromTokenizer
	if n.c.tok == nil {
		how = metrics.TokensEven
	}
	k := int64(len(chunks))
	switch {
	case total == k:
		for i := range chunks {
			chunks[i].Tokens = 1
		}
		return metrics.TokensOnePerChunk
	case total < k:
		n.rescale(chunks, own, total)
		return how
	}
	// Clamp the smallest weights to one token while their share is below one: in ascending
	// order of weight, the first chunk whose share of what is left reaches one ends it.
	idx := n.scratch.idx[:0]
	var w int64
	for i, x := range own {
		idx = append(idx, int32(i))
		w += int64(x)
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(own[a], own[b]) })
	left := total
	for _, i := range idx {
		if left*int64(own[i]) >= w {
			break
		}
		w -= int64(own[i])
		own[i] = 0
		left--
	}
	n.scratch.idx = idx
	n.rescale(chunks, own, left)
	for i := range chunks {
		if own[i] == 0 {
			chunks[i].Tokens = 1
		}
	}
	return how
}

// deltaSum is the sum of the chunks' usage deltas (valid when every chunk had one).
func (n *counter) deltaSum() int64 {
	var s int64
	for _, c := range n.rec.Chunks {
		s += int64(c.Tokens)
	}
	return s
}

// rescale sets the chunks' counts to weights scaled to total by the largest-remainder rule:
// each chunk gets floor(total*w/W), and the tokens left over go one each to the chunks with
// the largest remainders (earlier chunks first among equals), so the counts sum to total.
func (n *counter) rescale(chunks []metrics.Chunk, weights []int32, total int64) {
	var w int64
	for _, x := range weights {
		w += int64(x)
	}
	if w <= 0 {
		return
	}
	left := total
	for i, x := range weights {
		q := total * int64(x) / w
		chunks[i].Tokens = int32(q)
		left -= q
	}
	if left == 0 {
		return
	}
	idx := n.scratch.idx[:0]
	for i := range weights {
		idx = append(idx, int32(i))
	}
	rem := func(i int32) int64 { return total * int64(weights[i]) % w }
	slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(rem(b), rem(a)) })
	for _, i := range idx[:left] {
		chunks[i].Tokens++
	}
	n.scratch.idx = idx
}

// complete applies the checks of a response that ended normally.
func (n *counter) complete() {
	rec := n.rec
	switch {
	case !n.textSeen:
		n.c.fail(rec, metrics.FailEmpty, "the response carried no generated text")
	case n.c.ext.ignoreEOS && !n.natural && !n.unknown && rec.TokenSource != metrics.TokensFromChunks && rec.OutputTokens < rec.RequestedTokens:
		// (One per chunk is only a lower bound: a chunk may carry several tokens.)
		n.c.fail(rec, metrics.FailShortOutput, fmt.Sprintf("%d output tokens, %d requested with ignore_eos", rec.OutputTokens, rec.RequestedTokens))
	}
}
