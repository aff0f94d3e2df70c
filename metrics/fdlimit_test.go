package metrics

import (
	"strings"
	"testing"
)

// Requests that failed because the client ran out of file descriptors make the run
// client-limited, however good its lag and CPU figures (issue 18).
func TestClientFDLimitMakesTheRunClientLimited(t *testing.T) {
	mk := func(fd int) []Record {
		var recs []Record
		for i := range 20 {
			r := Record{ID: string(rune('a' + i)), Intended: int64(i) * 1e6, Dispatched: int64(i) * 1e6, Sent: int64(i) * 1e6,
				FirstToken: int64(i)*1e6 + 5e6, End: int64(i)*1e6 + 9e6, InputTokens: 4, OutputTokens: 1, TokenSource: TokensFromChunks,
				Chunks: []Chunk{{T: int64(i)*1e6 + 5e6, Tokens: 1}}}
			if i < fd {
				r.Failure, r.Error, r.FirstToken, r.End, r.Chunks, r.OutputTokens = FailClientFDLimit, "socket: too many open files", 0, r.Sent, nil, 0
			}
			recs = append(recs, r)
		}
		return recs
	}
	for _, fd := range []int{0, 3} {
		sum, err := Summarize(SliceSource(mk(fd)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Client.Limited != (fd > 0) {
			t.Errorf("%d fd-limit failures: client limited %v (%q)", fd, sum.Client.Limited, sum.Client.Reason)
		}
		if fd > 0 && (!strings.Contains(sum.Client.Reason, "3 requests") || !strings.Contains(sum.Client.Reason, "file descriptors") || sum.Requests.Failures[string(FailClientFDLimit)] != 3) {
			t.Errorf("reason %q, failures %v", sum.Client.Reason, sum.Requests.Failures)
		}
	}
}
