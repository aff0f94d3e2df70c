package loadgen

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/llmbench/llmbench/traces"
)

// Embeddings batches (Target.API "embeddings"). Options.BatchSize consecutive trace requests,
// in arrival order, go out as one call whose "input" holds their texts; the call is sent when
// its last request arrives (a client batches what it has received), and its Record carries the
// first request's id, the batch's summed input tokens and its latency: throughput and latency
// are per batch.

// batchSource groups the requests of a trace into batches of n: each batch is one Request
// (the first member's id, class and line, the last member's arrival, the members' summed
// input tokens) and its members are kept until the call is built.
type batchSource struct {
	traces.Source
	n           int
	first, last time.Duration

	mu      sync.Mutex
	members map[*traces.Request][]traces.Request
}

var errStopWalk = errors.New("stop")

func newBatchSource(src traces.Source, n int) (*batchSource, error) {
	sessions := 0
	src.Sessions(func(int, *traces.Request) { sessions++ })
	if sessions > 0 {
		return nil, fmt.Errorf("the embeddings API sends no conversation: the trace has %d requests in multi-turn sessions; replay it with another --api or drop the sessions", sessions)
	}
	b := &batchSource{Source: src, n: max(n, 1), members: map[*traces.Request][]traces.Request{}}
	_, b.last = src.Span()
	// The first batch goes out when its n-th request (or the trace's last) arrives.
	i := 0
	err := src.Singles(func(_ int, q *traces.Request) error {
		b.first = q.Arrival
		i++
		if i == b.n {
			return errStopWalk
		}
		return nil
	})
	if err != nil && err != errStopWalk {
		return nil, err
	}
	return b, nil
}

func (b *batchSource) Len() int { return (b.Source.Len() + b.n - 1) / b.n }

func (b *batchSource) Span() (time.Duration, time.Duration) { return b.first, b.last }

func (b *batchSource) Sessions(func(int, *traces.Request)) {}

func (b *batchSource) Singles(fn func(pos int, q *traces.Request) error) error {
	var cur []traces.Request
	k := 0
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		q := &traces.Request{ID: cur[0].ID, Class: cur[0].Class, Line: cur[0].Line, Arrival: cur[len(cur)-1].Arrival, Model: cur[0].Model}
		for i := range cur {
			q.InputTokens += cur[i].InputTokens
		}
		b.mu.Lock()
		b.members[q] = cur
		b.mu.Unlock()
		cur = nil
		k++
		return fn(k-1, q)
	}
	err := b.Source.Singles(func(_ int, q *traces.Request) error {
		if len(cur) > 0 && q.Model != cur[0].Model {
			if err := flush(); err != nil { // one embeddings call names one model
				return err
			}
		}
		cur = append(cur, *q)
		if len(cur) == b.n {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

func (b *batchSource) Requests() ([]traces.Request, error) {
	var out []traces.Request
	err := b.Singles(func(_ int, q *traces.Request) error {
		out = append(out, *q)
		b.take(q)
		return nil
	})
	return out, err
}

// take returns (and forgets) the members of batch q; a request that is no batch is its own.
func (b *batchSource) take(q *traces.Request) []traces.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, ok := b.members[q]
	if !ok {
		return []traces.Request{*q}
	}
	delete(b.members, q)
	return m
}

// embeddingCall fills k with the inputs of batch q: each member's prompt, messages joined,
// or synthesized text of its input_tokens.
func (r *runner) embeddingCall(k *call, q *traces.Request) {
	k.api = "embeddings"
	k.maxTokens = 0
	members := []traces.Request{*q}
	if r.batches != nil {
		members = r.batches.take(q)
	}
	n := 0
	for i := range members {
		m := &members[i]
		if m.ImageCount() > 0 {
			k.bodyErr = fmt.Errorf("request %s carries images: the embeddings API takes text only", m.ID)
			return
		}
		if m.InputTokens > traces.MaxTokens {
			k.bodyErr = fmt.Errorf("input_tokens %d: past the cap of %d tokens (traces.MaxTokens)", m.InputTokens, traces.MaxTokens)
			return
		}
		text := m.Prompt
		switch {
		case text == "" && len(m.Messages) > 0:
			text = joinMessages(m.Messages)
		case text == "":
			text = r.prompter.Text(m)
		}
		if r.opts.Tokenizer != nil && (m.Prompt != "" || len(m.Messages) > 0) {
			n += r.opts.Tokenizer.Count(text)
		} else {
			n += m.InputTokens
		}
		k.inputs = append(k.inputs, text)
	}
	k.inputTokens = n
}
