package traces

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// walkOrder collects a source's requests in arrival order with their positions.
func walkOrder(t *testing.T, src Source) ([]int, []Request) {
	t.Helper()
	var pos []int
	var reqs []Request
	if err := InArrivalOrder(src, func(p int, q *Request) error {
		pos = append(pos, p)
		reqs = append(reqs, *q)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return pos, reqs
}

// transformTrace is a sorted trace with a multi-turn session among single requests, written
// to a file so that OpenFile reads it as it goes.
func transformTrace(t *testing.T) (Source, []Request) {
	t.Helper()
	var reqs []Request
	for i := 0; i < 40; i++ {
		q := Request{ID: "q" + strconv.Itoa(i), Arrival: time.Duration(i/2) * 100 * time.Millisecond, InputTokens: 10 + i, OutputTokens: 1 + i%7, Class: []string{"chat", "rag"}[i%2]}
		if i%10 == 3 {
			q.Session, q.Turn = "s", i/10
		}
		reqs = append(reqs, q)
	}
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := WriteFile(path, reqs); err != nil {
		t.Fatal(err)
	}
	src, err := OpenFile(path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if Held(src) {
		t.Fatal("the sorted trace file is held")
	}
	held, err := ReadFile(path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return src, held
}

func TestInArrivalOrderMergesSessions(t *testing.T) {
	src, held := transformTrace(t)
	pos, reqs := walkOrder(t, src)
	if len(pos) != len(held) {
		t.Fatalf("walked %d of %d requests", len(pos), len(held))
	}
	for i := range pos {
		if pos[i] != i || reqs[i].ID != held[i].ID {
			t.Fatalf("step %d: position %d id %s, want %d %s", i, pos[i], reqs[i].ID, i, held[i].ID)
		}
	}
}

func TestHead(t *testing.T) {
	src, held := transformTrace(t)
	h, err := Head(src, 15)
	if err != nil {
		t.Fatal(err)
	}
	want := FromSlice(held[:15])
	if h.Len() != 15 || !reflect.DeepEqual(h.Stats(), want.Stats()) {
		t.Errorf("len %d, stats %+v; want 15, %+v", h.Len(), h.Stats(), want.Stats())
	}
	if f, l := h.Span(); f != held[0].Arrival || l != held[14].Arrival {
		t.Errorf("span %v–%v", f, l)
	}
	_, reqs := walkOrder(t, h)
	if !reflect.DeepEqual(reqs, held[:15]) {
		t.Errorf("head walks %v", reqs)
	}
	if all, err := h.Requests(); err != nil || !reflect.DeepEqual(all, held[:15]) {
		t.Errorf("Requests: %v %v", all, err)
	}
	for _, n := range []int{0, -1, 40, 41} {
		if same, _ := Head(src, n); same != src {
			t.Errorf("Head(%d) is not the source itself", n)
		}
	}
}

func TestMap(t *testing.T) {
	src, held := transformTrace(t)
	zero := 0.0
	m, err := Map(src, func(q *Request) { q.Temperature = &zero; q.OutputTokens++ })
	if err != nil {
		t.Fatal(err)
	}
	want := make([]Request, len(held))
	for i := range held {
		want[i] = held[i]
		want[i].Temperature = &zero
		want[i].OutputTokens++
	}
	_, reqs := walkOrder(t, m)
	if !reflect.DeepEqual(reqs, want) {
		t.Error("mapped walk differs")
	}
	if all, _ := m.Requests(); !reflect.DeepEqual(all, want) {
		t.Error("mapped Requests differ")
	}
	if !reflect.DeepEqual(m.Stats(), FromSlice(want).Stats()) {
		t.Errorf("stats %+v, want %+v", m.Stats(), FromSlice(want).Stats())
	}
	if _, reqs := walkOrder(t, src); reqs[0].Temperature != nil || reqs[0].OutputTokens != held[0].OutputTokens {
		t.Error("Map changed the source's requests")
	}
}

// tiled is Tile as a slice: the definition Tile's Source must match.
func tiled(reqs []Request, n int) []Request {
	first, last := reqs[0].Arrival, reqs[len(reqs)-1].Arrival
	p := TilePeriod(first, last, len(reqs))
	var out []Request
	for k := 0; k < n; k++ {
		for _, r := range reqs {
			if k > 0 {
				r.ID += fmt.Sprintf("~%d", k)
				if r.Session != "" {
					r.Session += fmt.Sprintf("~%d", k)
				}
				r.Arrival += time.Duration(k) * p
			}
			out = append(out, r)
		}
	}
	return out
}

func TestTile(t *testing.T) {
	src, held := transformTrace(t)
	tl := Tile(src, 3)
	want := tiled(held, 3)
	if tl.Len() != len(want) || !reflect.DeepEqual(tl.Stats(), FromSlice(want).Stats()) {
		t.Errorf("len %d stats %+v; want %d %+v", tl.Len(), tl.Stats(), len(want), FromSlice(want).Stats())
	}
	if f, l := tl.Span(); f != want[0].Arrival || l != want[len(want)-1].Arrival {
		t.Errorf("span %v–%v, want %v–%v", f, l, want[0].Arrival, want[len(want)-1].Arrival)
	}
	pos, reqs := walkOrder(t, tl)
	for i := range pos {
		if pos[i] != i {
			t.Fatalf("step %d at position %d", i, pos[i])
		}
	}
	if !reflect.DeepEqual(reqs, want) {
		t.Error("tiled walk differs from the tiled slice")
	}
	if all, _ := tl.Requests(); !reflect.DeepEqual(all, want) {
		t.Error("tiled Requests differ")
	}
	if Tile(src, 1) != src {
		t.Error("one copy is not the source itself")
	}
}
