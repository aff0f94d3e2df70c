package workloads

import (
	"hash/fnv"
	"strconv"
	"strings"
	"sync"

	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// Prompter synthesizes prompt text. It caches the text of shared blocks, so reuse one
// Prompter for a whole trace. It is safe for concurrent use.
//
// The prompt is a sequence of segments. Block k of the request's HashIDs covers tokens
// [k·B, (k+1)·B) of the prompt (B = blockTokens, default 512) and its text depends only on
// (seed, hash id): every request with the same leading hash ids starts with byte-identical
// text, so real engines' prefix caches see the sharing. A final partial block is a prefix of
// that block's full text. Tokens beyond the hash ids come from a stream seeded by the request
// (id, arrival, session, turn), so other requests do not share them.
//
// Every segment is a stream of distinct two-syllable words (tokenizer.Text), never a single
// repeated token. Under tokenizer.Reference each word is one token, so the count is exact by
// construction. Under any other tokenizer each full block is fitted on its own to B tokens,
// and the rest is fitted to the total: the largest number of words that does not exceed the
// target, then single-token filler words (" the", " of", ",", ...) until the count is exact.
// If the tokenizer has no filler that adds exactly one token, the text ends up to a few
// tokens short; Count of the result is the truth.
type Prompter struct {
	tok    tokenizer.Tokenizer
	seed   int64
	block  int
	ref    bool
	mu     sync.Mutex
	blocks map[int64]string // fitted full-block text per hash id (non-reference tokenizers)
	// vocab, when set, is the word list text is drawn from instead of tokenizer.Word's
	// (NewPrompterWords).
	vocab []string
}

// NewPrompter returns a Prompter; tok nil means tokenizer.Reference, blockTokens <= 0 means
// traces.DefaultBlockTokens.
func NewPrompter(tok tokenizer.Tokenizer, seed int64, blockTokens int) *Prompter {
	if tok == nil {
		tok = tokenizer.Reference{}
	}
	if blockTokens <= 0 {
		blockTokens = traces.DefaultBlockTokens
	}
	_, ref := tok.(tokenizer.Reference)
	if p, ok := tok.(*tokenizer.Reference); ok && p != nil {
		ref = true
	}
	return &Prompter{tok: tok, seed: seed, block: blockTokens, ref: ref, blocks: map[int64]string{}}
}

// NewPrompterWords is NewPrompter drawing its words from vocab (each with its leading space)
// instead of the reference vocabulary: a tokenizer that knows the token cost of only those
// words (one learned from a server's /tokenize, loadgen's prompt sizing) can then fit every
// prompt. Text depends on (seed, position) as with NewPrompter; an empty vocab is NewPrompter.
func NewPrompterWords(tok tokenizer.Tokenizer, seed int64, blockTokens int, vocab []string) *Prompter {
	p := NewPrompter(tok, seed, blockTokens)
	if len(vocab) > 0 {
		p.vocab = append([]string(nil), vocab...)
		p.ref = false
	}
	return p
}

// words returns n words of the stream seed: tokenizer.Text, or the same picks from p.vocab.
func (p *Prompter) words(seed uint64, n int) string {
	if p.vocab == nil {
		return tokenizer.Text(seed, 0, n)
	}
	if n <= 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(min(n, 1<<20) * 6)
	for i := 0; i < n; i++ {
		b.WriteString(p.vocab[tokenizer.Mix(seed^tokenizer.Mix(uint64(i)))%uint64(len(p.vocab))])
	}
	return b.String()
}

// segment is a run of n tokens from the word stream seeded by seed.
type segment struct {
	seed uint64
	n    int
	id   int64
	full bool // a whole block of a hash id
}

func (p *Prompter) blockSeed(id int64) uint64 {
	return tokenizer.Mix(uint64(p.seed) ^ tokenizer.Mix(uint64(id)^0x626c6f636b))
}

func (p *Prompter) tailSeed(req *traces.Request) uint64 {
	h := fnv.New64a()
	h.Write([]byte(req.ID))
	h.Write([]byte{0})
	h.Write([]byte(req.Session))
	h.Write([]byte{0})
	h.Write([]byte(strconv.FormatInt(int64(req.Arrival), 10) + "/" + strconv.Itoa(req.Turn)))
	return tokenizer.Mix(uint64(p.seed) ^ h.Sum64())
}

func (p *Prompter) segments(req *traces.Request) []segment {
	target := req.InputTokens
	var segs []segment
	covered := 0
	for k, id := range req.HashIDs {
		start := k * p.block
		if start >= target {
			break
		}
		n := min(p.block, target-start)
		segs = append(segs, segment{seed: p.blockSeed(id), n: n, id: id, full: n == p.block})
		covered = start + n
	}
	if covered < target {
		segs = append(segs, segment{seed: p.tailSeed(req), n: target - covered})
	}
	return segs
}

// Text returns the prompt text of req (see Prompter). A request past traces.MaxTokens (one
// built in code: trace reading refuses them) gets no synthesized text rather than an
// allocation without bound.
func (p *Prompter) Text(req *traces.Request) string {
	if req.Prompt != "" {
		return req.Prompt
	}
	if req.InputTokens < 1 || req.InputTokens > traces.MaxTokens {
		return ""
	}
	segs := p.segments(req)
	if p.ref {
		var b strings.Builder
		b.Grow(req.InputTokens * 6)
		for _, s := range segs {
			b.WriteString(tokenizer.Text(s.seed, 0, s.n))
		}
		return b.String()
	}
	return p.fitted(segs, req.InputTokens)
}

// messages returns req's chat messages: its own when it has them, otherwise one user message
// holding Text(req), whose content has exactly InputTokens tokens.
func (p *Prompter) messages(req *traces.Request) []traces.Message {
	if len(req.Messages) > 0 {
		return req.Messages
	}
	return []traces.Message{{Role: "user", Content: p.Text(req)}}
}

func (p *Prompter) fitted(segs []segment, target int) string {
	text := ""
	last := segs[len(segs)-1]
	for i, s := range segs {
		if !s.full || i == len(segs)-1 {
			last = s
			break
		}
		bt := p.blockText(s)
		if p.tok.Count(text+bt) > target {
			last = s // merging pushed us over: fit the rest from this block's stream
			break
		}
		text += bt
	}
	return p.fit(text, last.seed, target)
}

func (p *Prompter) blockText(s segment) string {
	p.mu.Lock()
	bt, ok := p.blocks[s.id]
	p.mu.Unlock()
	if ok {
		return bt
	}
	bt = p.fit("", s.seed, p.block)
	p.mu.Lock()
	p.blocks[s.id] = bt
	p.mu.Unlock()
	return bt
}

// fillers are short words that are one token in most tokenizers, then single characters
// for small vocabularies.
var fillers = func() []string {
	f := []string{" the", " of", " and", " to", " in", " is", " it", " on", ",", ".", " a", " for", " as", " at", " by"}
	for _, c := range "etaoinshrdlucmfwypvbgkqjxz0123456789.,;:!?-" {
		f = append(f, " "+string(c), string(c))
	}
	return f
}()

// FillerWords returns the fillers that begin with a space (" the", " of", " e", ...): the
// ones a tokenizer that counts space-separated words (loadgen's prompt sizing) can learn the
// cost of, so that a fitted prompt can end exactly on its target.
func FillerWords() []string {
	var out []string
	for _, f := range fillers {
		if len(f) > 1 && f[0] == ' ' {
			out = append(out, f)
		}
	}
	return out
}

// fit appends words from the stream seed to prefix so that p.tok counts exactly target tokens
// (or as close below as the tokenizer allows).
func (p *Prompter) fit(prefix string, seed uint64, target int) string {
	tok := p.tok
	base := tok.Count(prefix)
	if base >= target {
		return prefix
	}
	// Each word of a real tokenizer is at least one token, so at most target-base words fit;
	// a tokenizer that counts words at a fractional mean below one (loadgen's calibrated
	// prompt sizing) fits more, found by doubling.
	lo, hi := 0, target-base // invariant: lo words fit
	for hi < 8*(target-base) && tok.Count(prefix+p.words(seed, hi)) < target {
		lo, hi = hi, 2*hi
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if tok.Count(prefix+p.words(seed, mid)) <= target {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	text := prefix + p.words(seed, lo)
	n := tok.Count(text)
	for step := 0; n < target && step < 4*len(fillers)+target-n; step++ {
		added := false
		for j := range fillers {
			f := fillers[(step+j)%len(fillers)]
			if c := tok.Count(text + f); c == n+1 {
				text += f
				n = c
				added = true
				break
			}
		}
		if !added {
			break
		}
	}
	return text
}
