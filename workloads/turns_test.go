package workloads

import (
	"testing"

	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// TestTurnText: a later turn adds what its whole input has beyond the conversation it
// carries; a turn no longer than its conversation carries none.
func TestTurnText(t *testing.T) {
	p := NewPrompter(tokenizer.Reference{}, 1, 0)
	var tok tokenizer.Reference
	q := &traces.Request{ID: "r2", Session: "s", Turn: 2, InputTokens: 1500, OutputTokens: 5, HashIDs: []int64{1, 2, 3}}
	text, carry := p.TurnText(q, 1240)
	if !carry || tok.Count(text) != 260 {
		t.Fatalf("carry %v, %d tokens of its own, want 260", carry, tok.Count(text))
	}
	if text == p.Text(&traces.Request{ID: "r2", Session: "s", Turn: 2, InputTokens: 260, OutputTokens: 5, HashIDs: []int64{1}}) {
		t.Error("the turn's own text starts with its hash ids' blocks, which the conversation already holds")
	}
	text, carry = p.TurnText(q, 1500)
	if carry || text != p.Text(q) || tok.Count(text) != 1500 {
		t.Fatalf("compacted: carry %v, %d tokens", carry, tok.Count(text))
	}
	if text, carry := p.TurnText(q, 0); !carry || text != p.Text(q) {
		t.Fatal("a first turn is its own text")
	}
}
