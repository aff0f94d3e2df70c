package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// pullEvents reads b with sseReader, the events up to the first error, and that error.
func pullEvents(b []byte, limit int) ([]string, error) {
	sr := newSSEReader(bytes.NewReader(b), 16)
	sr.max = limit
	var out []string
	for {
		d, e, err := sr.next()
		if err != nil {
			return out, err
		}
		out = append(out, fmt.Sprintf("%q/%q", e, d))
	}
}

// pushEvents feeds b to ssePush in the pieces cuts makes, then ends it.
func pushEvents(b []byte, limit int, cuts []int) ([]string, error) {
	p := newSSEPush(limit)
	var out []string
	emit := func(d, e []byte) bool { out = append(out, fmt.Sprintf("%q/%q", e, d)); return true }
	at := 0
	for _, c := range cuts {
		c = min(max(c, at), len(b)) // a cut before the last one is an empty piece
		if err := p.feed(b[at:c], emit); err != nil {
			return out, err
		}
		at = c
	}
	if err := p.feed(b[at:], emit); err != nil {
		return out, err
	}
	return out, p.end(emit)
}

func samePull(t *testing.T, b []byte, limit int, cuts []int) {
	t.Helper()
	want, werr := pullEvents(b, limit)
	got, gerr := pushEvents(b, limit, cuts)
	if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Fatalf("input %q cut at %v:\npush %v, %v\npull %v, %v", b, cuts, got, gerr, want, werr)
	}
}

// TestSSEPushMatchesReader: the push parser gives sseReader's events and end, whatever the
// pieces the body arrives in: every cut of every case below, one and two cuts.
func TestSSEPushMatchesReader(t *testing.T) {
	cases := []string{
		"data: 1\n\ndata: [DONE]\n\n",
		"\xEF\xBB\xBFdata: bom\n\n",
		"\xEF\xBB",
		"\xEF\xBB\xBF",
		"data: a\r\ndata: b\r\n\r\nevent: x\rdata: c\r\r",
		": keep-alive\n\nevent: error\ndata: x\n\n",
		"error: {\"message\":\"boom\"}\n\n",
		"data: no blank line at the end\n",
		"data: cut inside a line",
		"data:\n\ndata: \n\n",
		"id: 3\nretry: 10\nfield\ndata: y\n\n",
		"data: " + strings.Repeat("z", 40) + "\n\n",
		"data: 0123456789\ndata: 0123456789\n\n",
		"\r\n\r\ndata: after blank lines\n\n",
	}
	for _, c := range cases {
		b := []byte(c)
		samePull(t, b, 24, nil)
		for i := 0; i <= len(b); i++ {
			samePull(t, b, 24, []int{i})
			for j := i; j <= len(b); j++ {
				samePull(t, b, 24, []int{i, j})
			}
		}
	}
}

// TestSSEPushStops: once emit says stop, nothing more is parsed or delivered, and end says
// nothing either.
func TestSSEPushStops(t *testing.T) {
	p := newSSEPush(1 << 10)
	n := 0
	emit := func(d, e []byte) bool { n++; return false }
	if err := p.feed([]byte("data: 1\n\ndata: 2\n\n"), emit); err != nil || n != 1 {
		t.Fatalf("feed: %v, %d events", err, n)
	}
	if err := p.feed([]byte("data: 3\n\n"), emit); err != nil || n != 1 {
		t.Fatalf("feed after stop: %v, %d events", err, n)
	}
	if err := p.end(emit); err != nil || n != 1 {
		t.Fatalf("end after stop: %v, %d events", err, n)
	}
	q := newSSEPush(8)
	if err := q.feed([]byte("data: 0123456789"), emit); !errors.Is(err, errMalformedSSE) {
		t.Fatalf("a line over the limit: %v", err)
	}
	if err := q.end(emit); !errors.Is(err, errMalformedSSE) || errors.Is(err, io.EOF) {
		t.Fatalf("end after a failure: %v", err)
	}
}

// FuzzSSEPushMatchesReader: any body, cut anywhere, parses as sseReader parses it whole.
func FuzzSSEPushMatchesReader(f *testing.F) {
	for _, s := range []string{"data: 1\n\n", "\xEF\xBB\xBFdata: [DONE]\r\n\r\n", ": c\n\ndata: a\ndata: b\n\n", "event: error\ndata: x\n\n", "garbage\n", "data: " + strings.Repeat("z", 40)} {
		f.Add([]byte(s), uint64(1))
	}
	f.Fuzz(func(t *testing.T, b []byte, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 7))
		var cuts []int
		for i := 0; i < r.IntN(6); i++ {
			cuts = append(cuts, r.IntN(len(b)+1))
		}
		samePull(t, b, 24, cuts)
	})
}
