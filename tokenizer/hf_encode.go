package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Encoding: added tokens, normalizers, pre-tokenizer steps, then byte-pair merges per word.

// Count implements Tokenizer.
func (h *HF) Count(text string) int {
	n := 0
	h.walk(text, false, func(ids []int) { n += len(ids) })
	return n
}

// CountContinuation counts text as it is tokenized in the middle of a longer input: no
// prefix is added at its start (the "▁" of a Prepend normalizer or Metaspace pre-tokenizer,
// ByteLevel's add_prefix_space). Streamed chunks need it: a SentencePiece-style Count(" world")
// is 2 ("▁" + "▁world") where the model emitted one token. For files without such a prefix
// (Llama 3, Qwen, GPT-style) it equals Count. CountChunk picks it when available.
func (h *HF) CountContinuation(text string) int {
	n := 0
	h.walk(text, true, func(ids []int) { n += len(ids) })
	return n
}

// Encode implements Tokenizer.
func (h *HF) Encode(text string) []int {
	ids := make([]int, 0, len(text)/3+1)
	h.walk(text, false, func(t []int) { ids = append(ids, t...) })
	return ids
}

// walk calls emit with the ids of text, in order; cont marks text that continues earlier
// text.
func (h *HF) walk(text string, cont bool, emit func([]int)) {
	start := 0
	var one [1]int
	for i := 0; i < len(text); {
		a, ms, me := h.matchAdded(text, i, start)
		if a == nil {
			i++
			continue
		}
		h.walkSegment(text[start:ms], start == 0 && !cont, start == 0 && cont, emit)
		one[0] = a.id
		emit(one[:])
		start, i = me, me
	}
	h.walkSegment(text[start:], start == 0 && !cont, start == 0 && cont, emit)
}

// matchAdded returns the added token at text[i:], with the span it covers once lstrip and
// rstrip take the whitespace around it (never before floor).
func (h *HF) matchAdded(text string, i, floor int) (a *addedToken, start, end int) {
	for _, k := range h.addedByFirst[text[i]] {
		t := &h.added[k]
		if !strings.HasPrefix(text[i:], t.content) {
			continue
		}
		end := i + len(t.content)
		if t.wordOnly {
			before, _ := utf8.DecodeLastRuneInString(text[:i])
			after, _ := utf8.DecodeRuneInString(text[end:])
			if i > 0 && isWordRune(before) || end < len(text) && isWordRune(after) {
				return nil, 0, 0
			}
		}
		start := i
		if t.lstrip {
			for start > floor {
				r, size := utf8.DecodeLastRuneInString(text[floor:start])
				if !unicode.IsSpace(r) {
					break
				}
				start -= size
			}
		}
		if t.rstrip {
			for end < len(text) {
				r, size := utf8.DecodeRuneInString(text[end:])
				if !unicode.IsSpace(r) {
					break
				}
				end += size
			}
		}
		return t, start, end
	}
	return nil, 0, 0
}

// findWordMarker returns the space marker that SentencePiece-style BPE cannot merge across,
// or "" (see HF.wordMarker).
func (h *HF) findWordMarker() string {
	if h.byteLevel || h.ignoreMerges {
		// ignore_merges looks up whole pieces, so cutting them could change the result.
		return ""
	}
	marker := ""
	for _, r := range h.unreplace {
		if r[1] == " " {
			marker = r[0]
			break
		}
	}
	if marker == "" {
		return ""
	}
	if _, ok := h.vocab[marker]; !ok {
		return "" // an unknown marker could fuse with a neighbouring <unk>
	}
	for tok := range h.vocab {
		if i := strings.Index(strings.TrimLeft(tok, marker), marker); i >= 0 {
			return ""
		}
	}
	return marker
}

// cutAtMarkers calls fn for the parts of w that begin at a marker following a non-marker.
func cutAtMarkers(w, marker string, fn func(string)) {
	start := 0
	for i := len(marker); i < len(w); {
		j := strings.Index(w[i:], marker)
		if j < 0 {
			break
		}
		at := i + j
		if !strings.HasSuffix(w[:at], marker) {
			fn(w[start:at])
			start = at
		}
		i = at + len(marker)
	}
	fn(w[start:])
}

// walkSegment encodes text that holds no added token.
func (h *HF) walkSegment(seg string, first, cont bool, emit func([]int)) {
	if seg == "" {
		return
	}
	for _, n := range h.normalizers {
		seg = n(seg, cont)
	}
	pieces := []piece{{s: seg, first: first, cont: cont}}
	for _, step := range h.pre {
		pieces = step(pieces)
	}
	for _, p := range pieces {
		switch {
		case p.s == "":
		case h.wordMarker != "" && len(p.s) > maxCachedLen:
			cutAtMarkers(p.s, h.wordMarker, func(w string) { emit(h.word(w)) })
		default:
			emit(h.word(p.s))
		}
	}
}

// word returns the BPE ids of one pre-tokenized piece. The slice must not be modified.
func (h *HF) word(w string) []int {
	if len(w) > maxCachedLen {
		return h.bpe(w)
	}
	if ids, ok := h.cache.get(w); ok {
		return ids
	}
	ids := h.bpe(w)
	h.cache.put(w, ids)
	return ids
}

// resetCache empties the word cache (benchmarks measure cold encoding with it).
func (h *HF) resetCache() { h.cache.reset() }

func (h *HF) bpe(w string) []int {
	if h.ignoreMerges {
		key := w
		if h.byteLevel {
			key = byteLevelString(w)
		}
		if id, ok := h.vocab[key]; ok {
			return []int{id}
		}
	}
	syms := h.symbols(w)
	if len(syms) < 2 {
		ids := make([]int, len(syms))
		for i, s := range syms {
			ids[i] = s.id
		}
		return ids
	}
	var q mergeQueue
	for i := 0; i+1 < len(syms); i++ {
		if m, ok := h.merges[uint64(syms[i].id)<<32|uint64(syms[i+1].id)]; ok {
			q = append(q, mergeCand{pos: i, rank: int(m >> 32), id: int(uint32(m))})
		}
	}
	q.init()
	for len(q) > 0 {
		top := q.pop()
		left := &syms[top.pos]
		if left.dead || left.next < 0 {
			continue
		}
		right := &syms[left.next]
		m, ok := h.merges[uint64(left.id)<<32|uint64(right.id)]
		if !ok || int(uint32(m)) != top.id {
			continue
		}
		left.id = top.id
		right.dead = true
		left.next = right.next
		if left.next >= 0 {
			syms[left.next].prev = top.pos
		}
		if left.prev >= 0 {
			if m, ok := h.merges[uint64(syms[left.prev].id)<<32|uint64(left.id)]; ok {
				q.push(mergeCand{pos: left.prev, rank: int(m >> 32), id: int(uint32(m))})
			}
		}
		if left.next >= 0 {
			if m, ok := h.merges[uint64(left.id)<<32|uint64(syms[left.next].id)]; ok {
				q.push(mergeCand{pos: top.pos, rank: int(m >> 32), id: int(uint32(m))})
			}
		}
	}
	ids := make([]int, 0, len(syms))
	for i := 0; i >= 0 && i < len(syms); i = syms[i].next {
		ids = append(ids, syms[i].id)
	}
	return ids
}

type symbol struct {
	id         int
	prev, next int
	dead       bool
}

// symbols returns the initial BPE symbols of w, linked in order.
func (h *HF) symbols(w string) []symbol {
	syms := make([]symbol, 0, len(w))
	add := func(id int) {
		syms = append(syms, symbol{id: id, prev: len(syms) - 1, next: len(syms) + 1})
	}
	if h.byteLevel {
		for i := 0; i < len(w); i++ {
			if id := h.byteIDs[w[i]]; id >= 0 {
				add(id)
			} else if h.unk >= 0 && !(h.fuseUnk && len(syms) > 0 && syms[len(syms)-1].id == h.unk) {
				add(h.unk)
			}
		}
	} else {
		pendingUnk := false
		for i := 0; i < len(w); {
			_, size := utf8.DecodeRuneInString(w[i:])
			ch := w[i : i+size]
			i += size
			if id, ok := h.vocab[ch]; ok {
				if pendingUnk {
					add(h.unk)
					pendingUnk = false
				}
				add(id)
				continue
			}
			if h.byteFallback && h.hasFallback(ch) {
				if pendingUnk {
					add(h.unk)
					pendingUnk = false
				}
				for j := 0; j < len(ch); j++ {
					add(h.fallbackIDs[ch[j]])
				}
				continue
			}
			if h.unk >= 0 {
				if pendingUnk && !h.fuseUnk {
					add(h.unk)
				}
				pendingUnk = true
			}
		}
		if pendingUnk {
			add(h.unk)
		}
	}
	if n := len(syms); n > 0 {
		syms[n-1].next = -1
	}
	return syms
}

func (h *HF) hasFallback(ch string) bool {
	for j := 0; j < len(ch); j++ {
		if h.fallbackIDs[ch[j]] < 0 {
			return false
		}
	}
	return true
}

type mergeCand struct{ pos, rank, id int }

// mergeQueue is a binary min-heap of merge candidates, ordered by rank and then by leftmost
// position, as the Hugging Face library orders them. (container/heap would box every
// candidate in an interface.)
type mergeQueue []mergeCand

func (q mergeQueue) less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].pos < q[j].pos
}

func (q *mergeQueue) init() {
	for i := len(*q)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

func (q *mergeQueue) push(c mergeCand) {
	*q = append(*q, c)
	h := *q
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (q *mergeQueue) pop() mergeCand {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	*q = h[:last]
	q.down(0)
	return top
}

func (q mergeQueue) down(i int) {
	for {
		least := i
		if l := 2*i + 1; l < len(q) && q.less(l, least) {
			least = l
		}
		if r := 2*i + 2; r < len(q) && q.less(r, least) {
			least = r
		}
		if least == i {
			return
		}
		q[i], q[least] = q[least], q[i]
		i = least
	}
}
