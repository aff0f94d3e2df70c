package reports

import "testing"

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
