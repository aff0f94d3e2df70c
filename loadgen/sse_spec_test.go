package loadgen

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// readAll returns every event's data, and the error that ended the stream.
func readAll(sr *sseReader) ([]string, error) {
	var got []string
	for {
		d, e, err := sr.next()
		if err != nil {
			return got, err
		}
		got = append(got, string(e)+"|"+string(d))
	}
}

// TestSSEReaderFollowsTheSpec checks the framing rules of the WHATWG server-sent events
// specification: CR, LF and CRLF all end a line (mixed in one stream), unknown fields and
// lines without a colon are ignored, comments are skipped, a leading BOM is dropped, and an
// event whose data is empty is not dispatched.
func TestSSEReaderFollowsTheSpec(t *testing.T) {
	in := "\xEF\xBB\xBFdata: a\r\rdata: b\r\ndata: c\n\n: comment\rfoo: bar\rjunk line\revent: x\rdata: d\r\r" +
		"data\n\ndata:\n\nid: 7\nretry: x\ndata:e\n\n"
	for _, size := range []int{16, 4096} {
		got, err := readAll(newSSEReader(strings.NewReader(in), size))
		if err != io.EOF {
			t.Fatalf("size %d: end %v, want io.EOF", size, err)
		}
		want := []string{"|a", "|b\nc", "x|d", "|e"}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("size %d: events %q, want %q", size, got, want)
		}
	}
}

// TestSSEReaderBoundsLines: a line past the limit is a malformed stream naming the limit,
// and the reader never holds more than the limit.
func TestSSEReaderBoundsLines(t *testing.T) {
	sr := newSSEReader(strings.NewReader("data: ok\n\ndata: "+strings.Repeat("z", 5000)+"\n\n"), 64)
	sr.max = 1000
	got, err := readAll(sr)
	if len(got) != 1 || !errors.Is(err, errMalformedSSE) || !strings.Contains(err.Error(), "1000-byte") {
		t.Fatalf("events %q, err %v: want one event, then a malformed stream naming the 1000-byte limit", got, err)
	}
	if cap(sr.long) > 2000 {
		t.Errorf("the reader grew to %d bytes for a 1000-byte limit", cap(sr.long))
	}
	// Several data lines are bounded together too.
	sr = newSSEReader(strings.NewReader(strings.Repeat("data: "+strings.Repeat("y", 300)+"\n", 10)+"\n"), 64)
	sr.max = 1000
	if _, err := readAll(sr); !errors.Is(err, errMalformedSSE) {
		t.Fatalf("an event of 10 lines of 300 bytes with a 1000-byte limit: %v", err)
	}
}
