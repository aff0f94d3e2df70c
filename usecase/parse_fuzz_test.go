package usecase

import (
	"math"
	"testing"
	"unicode/utf8"
)

// FuzzParsePoints: --points never panics; every accepted load is positive and finite (NaN
// and Inf were accepted before this target found them).
func FuzzParsePoints(f *testing.F) {
	for _, s := range []string{"1,2,4", " 8 ", "", "0", "-1", "1,,2", "NaN", "1e400", "inf", "2,x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		points, err := parsePoints(s)
		if err != nil {
			return
		}
		for _, p := range points {
			if !(p > 0) || math.IsInf(p, 0) {
				t.Errorf("%q accepted with load %g", s, p)
			}
		}
		if s == "" && points != nil {
			t.Errorf("empty --points gave %v", points)
		}
	})
}

// FuzzParseRepeats: --runs never panics; an accepted value is auto (with --max-runs >= 2) or
// a count >= 1, and an error stays short.
func FuzzParseRepeats(f *testing.F) {
	for _, s := range []string{"3", "auto", " AUTO ", "0", "-2", "x", "99999999999999999999"} {
		f.Add(s, 10)
		f.Add(s, 1)
	}
	f.Fuzz(func(t *testing.T, s string, maxRuns int) {
		n, auto, err := ParseRepeats(s, maxRuns)
		if err != nil {
			if utf8.ValidString(s) && len(s) < 100 && utf8.RuneCountInString(err.Error()) > 200 {
				t.Errorf("error %q for %q", err, s)
			}
			return
		}
		if auto && maxRuns < 2 || !auto && n < 1 {
			t.Errorf("%q (max %d) accepted as %d runs, auto %v", s, maxRuns, n, auto)
		}
	})
}
