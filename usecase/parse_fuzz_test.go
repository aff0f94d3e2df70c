package usecase

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/llmbench/llmbench/metrics"
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

// FuzzParseHeaders: --header never panics; an accepted header has a token name and a value
// without line breaks or NUL, and a refused one's error never quotes the value (it may be a
// secret).
func FuzzParseHeaders(f *testing.F) {
	for _, s := range []string{"X-Key: v", "Authorization: Bearer SECRET123", "no colon SECRETVALUE", "X Bad: v", "X: a\r\nY: b", ":", "K:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parseHeaders([]string{s})
		if err != nil {
			_, v, _ := strings.Cut(s, ":")
			if v = strings.TrimSpace(v); len(v) >= 12 && !strings.Contains(strings.SplitN(s, ":", 2)[0], v) && strings.Contains(err.Error(), v) {
				t.Errorf("error %q quotes the value of %q", err, s)
			}
			return
		}
		for k, v := range h {
			if !validHeaderName(k) || strings.ContainsAny(v, "\r\n\x00") {
				t.Errorf("%q accepted as %q: %q", s, k, v)
			}
		}
	})
}

// FuzzParseStall: --stall-threshold never panics; an accepted rule is a positive, finite
// multiple or a positive duration, never both (NaNx was accepted before this target found it).
func FuzzParseStall(f *testing.F) {
	for _, s := range []string{"5x", "250ms", "", "0x", "-1x", "NaNx", "1h", "x", "5", "1e400x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var o metrics.Options
		if err := parseStall(&o, s); err != nil {
			return
		}
		if o.StallMultiple != 0 && o.StallThreshold != 0 || o.StallMultiple < 0 || o.StallThreshold < 0 || math.IsNaN(o.StallMultiple) || math.IsInf(o.StallMultiple, 0) {
			t.Errorf("%q accepted as multiple %g, threshold %v", s, o.StallMultiple, o.StallThreshold)
		}
	})
}
