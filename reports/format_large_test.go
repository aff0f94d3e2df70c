package reports

import (
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// A saturated run's latencies (hours, in ms) must still fit the terminal table's 9-character
// columns instead of running into the next one.
func TestFmtMsHugeValuesFitColumns(t *testing.T) {
	for v, want := range map[float64]string{999_999: "999,999", 1_111_091: "1.11e+06", 2_233_467_000: "2.23e+09"} {
		got := fmtMs(v)
		if got != want || len(got) > 8 {
			t.Errorf("fmtMs(%v) = %q, want %q (at most 8 characters)", v, got, want)
		}
	}
}

// Counts of 10⁷ and more, and latencies of 10⁶ ms, never run columns together: every value of
// a table row stays separated from the one before by at least one space.
func TestTerminalColumnsNeverTouch(t *testing.T) {
	s := fixtureSummary("llama", "")
	s.Latency.TTFT.Count = 12_345_678_901
	s.Latency.E2E = metrics.Dist{Count: 99_999_999, Mean: 1_234_567, P50: 999_999, P90: 1_111_091, P95: 2_233_467, P99: 9_999_999, P999: 12_345_678, Max: 987_654_321}
	for _, c := range s.ByClass {
		c.Requests.Total, c.Requests.Failed = 123_456_789, 12_345_678
		c.Latency.TTFT.P99, c.Latency.TTFT.Count = 1_234_567, 5
	}
	var b strings.Builder
	if err := WriteTerminal(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		for _, glued := range []string{"12,345,678,901", "99,999,999", "123,456,789", "12,345,678"} {
			if i := strings.Index(line, glued); i > 0 && line[i-1] != ' ' {
				t.Errorf("%q runs into the column before it: %q", glued, line)
			}
		}
		if strings.Contains(line, "e+0") {
			for _, f := range strings.Fields(line) {
				if strings.Count(f, "e+") > 1 {
					t.Errorf("two values run together in %q", line)
				}
			}
		}
	}
}
