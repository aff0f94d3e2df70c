package usecase

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/llmbench/llmbench/refengine/perf"
)

// FuzzParseReplicaRange: --replicas never panics; an accepted value is auto (1..0) or a range
// 1 <= lo <= hi; an error quotes at most a clipped piece of the input.
func FuzzParseReplicaRange(f *testing.F) {
	for _, s := range []string{"auto", "1..8", "4", " 2 .. 3 ", "0..2", "3..1", "..", "1..", "-1", "9999999999999999999..1", "1...2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lo, hi, err := parseReplicaRange(s)
		if err != nil {
			if utf8.ValidString(s) && utf8.RuneCountInString(err.Error()) > 200 {
				t.Errorf("error %d runes long for %q", utf8.RuneCountInString(err.Error()), s)
			}
			return
		}
		if !(lo == 1 && hi == 0) && !(lo >= 1 && hi >= lo) {
			t.Errorf("%q accepted as %d..%d", s, lo, hi)
		}
	})
}

// FuzzParsePrices: --price-gpu-hour never panics; every accepted price is positive and finite
// and keyed by a GPU profile's name.
func FuzzParsePrices(f *testing.F) {
	for _, s := range []string{"h100=2.49", "h100=$2.49,h200=3.49", "a100=1.79,,", "h100=", "=2", "h100=NaN", "h100=-1", "h100=1e400", "tpu=1"} {
		f.Add(s)
	}
	reg := perf.NewRegistry()
	names := strings.Join(reg.GPUNames(), " ")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parsePrices([]string{s}, reg)
		if err != nil {
			return
		}
		for k, v := range m {
			if !strings.Contains(names, k) || !(v > 0) || v > 1e6 {
				t.Errorf("%q accepted as %s=%g", s, k, v)
			}
		}
	})
}
