package engineadapter

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/llmbench/llmbench/traces"
)

// TestHeldQueue: requests are taken back by their trace position in any order, including
// positions that differ from the walk index; what the record reads comes back whole; and
// fully taken chunks are given back, so the queue holds about the requests in flight.
func TestHeldQueue(t *testing.T) {
	var q heldQueue
	const n = 5 * heldChunk
	pos := func(k int) int { // walk index → position: a few swapped pairs
		if k%500 == 7 {
			return k + 1
		}
		if k%500 == 8 {
			return k - 1
		}
		return k
	}
	for k := 0; k < n; k++ {
		req := traces.Request{ID: "r", Class: "c", OutputTokens: k}
		if k%300 == 0 {
			req.Session, req.Turn, req.ResponseFormat = "s", 2, json.RawMessage(`{"type":"json_object"}`)
		}
		if got := q.add(pos(k), holdRequest(&req)); got != k {
			t.Fatalf("add %d returned walk index %d", k, got)
		}
	}
	// Take the first three chunks in reverse, then the rest in order.
	order := []int{}
	for k := 3*heldChunk - 1; k >= 0; k-- {
		order = append(order, k)
	}
	for k := 3 * heldChunk; k < n; k++ {
		order = append(order, k)
	}
	for i, k := range order {
		h, kk := q.take(pos(k))
		if kk != k {
			t.Fatalf("position %d: walk index %d, want %d", pos(k), kk, k)
		}
		want := traces.Request{ID: "r", Class: "c", OutputTokens: k}
		if k%300 == 0 {
			want.Session, want.Turn, want.ResponseFormat = "s", 2, json.RawMessage(`{"type":"json_object"}`)
		}
		if got := h.request(); !reflect.DeepEqual(got, want) {
			t.Fatalf("walk index %d: %+v, want %+v", k, got, want)
		}
		if i == 3*heldChunk-1 && (len(q.chunks) != 2 || q.first != 3*heldChunk) {
			t.Errorf("after the first three chunks were taken: %d chunks from %d", len(q.chunks), q.first)
		}
		if i == 3*heldChunk-2 && len(q.chunks) != 5 {
			t.Errorf("a chunk with a request still held was given back: %d chunks", len(q.chunks))
		}
	}
	if len(q.chunks) != 0 || len(q.remap) != 0 {
		t.Errorf("%d chunks, %d remapped after all were taken", len(q.chunks), len(q.remap))
	}
}

// TestInternerIsBounded: equal classes share one string, and a trace of distinct classes
// does not grow the table past maxInterned.
func TestInternerIsBounded(t *testing.T) {
	var in interner
	a := in.intern(strings.Clone("chat"))
	if b := in.intern(strings.Clone("chat")); unsafe.StringData(a) != unsafe.StringData(b) {
		t.Error("two equal classes were not given one string")
	}
	for i := 0; i < 3*maxInterned; i++ {
		if v := strconv.Itoa(i); in.intern(v) != v {
			t.Fatalf("intern(%q) changed the value", v)
		}
	}
	if len(in) != maxInterned {
		t.Errorf("%d strings held, want at most %d", len(in), maxInterned)
	}
}
