package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFailureMessages(t *testing.T) {
	var recs SliceSource
	add := func(n int, kind FailureKind, status int, msg func(i int) string) {
		for i := 0; i < n; i++ {
			r := timeline(fmt.Sprintf("%s-%d", kind, len(recs)), float64(len(recs))*10, 20, []float64{5, 5}, []int32{1, 1, 1})
			r.Failure, r.Status, r.Error = kind, status, msg(i)
			recs = append(recs, r)
		}
	}
	add(5, "", 0, func(int) string { return "" }) // successes
	add(14, FailHTTP4xx, 400, func(i int) string {
		return fmt.Sprintf("HTTP 400: this model's maximum context length is 4096 tokens; your prompt has %d tokens", 4100+i)
	})
	add(9, FailHTTP4xx, 401, func(int) string { return "HTTP 401: invalid API key" })
	add(2, FailHTTP4xx, 404, func(int) string { return "HTTP 404: model not found" })
	add(1, FailHTTP4xx, 413, func(int) string { return "HTTP 413: " + strings.Repeat("é", 400) })
	add(3, FailTimeoutIdle, 0, func(int) string { return "" })
	s, err := Summarize(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := s.Requests.FailureMessages[string(FailHTTP4xx)]
	if len(got) != FailMessagesShown {
		t.Fatalf("http_4xx messages: %+v", got)
	}
	if got[0].Count != 14 || !strings.HasSuffix(got[0].Message, "your prompt has 4100 tokens") {
		t.Errorf("first: %+v (messages differing only in numbers are one, shown by the first)", got[0])
	}
	if got[1].Count != 9 || got[1].Message != "HTTP 401: invalid API key" || got[2].Count != 2 {
		t.Errorf("then: %+v", got[1:])
	}
	if _, ok := s.Requests.FailureMessages[string(FailTimeoutIdle)]; ok {
		t.Errorf("a kind without messages is listed: %+v", s.Requests.FailureMessages)
	}
	var tally failTally
	tally = failTally{}
	tally.add(FailHTTP4xx, "HTTP 413: "+strings.Repeat("é", 400))
	m := tally.top()[string(FailHTTP4xx)][0]
	if n := utf8.RuneCountInString(m.Message); n != FailMessageLen || !utf8.ValidString(m.Message) || !strings.HasSuffix(m.Message, "…") {
		t.Errorf("long message: %d runes, valid %v", n, utf8.ValidString(m.Message))
	}
	for i := 0; i < failShapesPerKind+50; i++ {
		tally.add(FailHTTP5xx, strings.Repeat("x", i+1))
	}
	if n := len(tally[string(FailHTTP5xx)]); n != failShapesPerKind {
		t.Errorf("%d shapes kept, want the bound %d", n, failShapesPerKind)
	}
}

// A bucket without samples is null in summary.json and NaN again when read back.
func TestSeriesJSONNull(t *testing.T) {
	in := Series{1.5, math.NaN(), 0, math.Inf(1), 2}
	b, err := json.Marshal(struct {
		S Series `json:"s"`
	}{in})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"s":[1.5,null,0,null,2]}` {
		t.Fatalf("JSON %s", b)
	}
	var out struct {
		S Series `json:"s"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.S) != 5 || out.S[0] != 1.5 || !math.IsNaN(out.S[1]) || out.S[2] != 0 || !math.IsNaN(out.S[3]) || out.S[4] != 2 {
		t.Errorf("read back %v", out.S)
	}
}

// FuzzSeriesJSON: a time series read from a summary.json either fails cleanly or round-trips
// (null stays a gap, numbers stay numbers).
func FuzzSeriesJSON(f *testing.F) {
	for _, s := range []string{`[1.5,null,0,2]`, `null`, `[]`, `[null]`, `[1e308,-0,5e-324]`, `["x"]`, `[1,`, `{"a":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Series
		if err := json.Unmarshal(data, &s); err != nil {
			return
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal %v: %v", s, err)
		}
		var back Series
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("re-read %s: %v", b, err)
		}
		if len(back) != len(s) {
			t.Fatalf("%d values became %d", len(s), len(back))
		}
		for i := range s {
			if math.IsNaN(s[i]) != math.IsNaN(back[i]) || (!math.IsNaN(s[i]) && s[i] != back[i]) {
				t.Fatalf("value %d: %v became %v", i, s[i], back[i])
			}
		}
	})
}
