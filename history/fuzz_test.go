package history

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// FuzzParseSummary: any bytes given as summary.json either parse, with every stored metric
// finite and every fact readable, or give an error; never a panic. Seeds: today's fixture and
// the corpus under testdata/fuzz.
func FuzzParseSummary(f *testing.F) {
	if b, err := os.ReadFile("testdata/summary-v1.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"schema":"llmbench.summary/v1","run":{"start":"2026-01-01T00:00:00Z","engine":{"version":"x"}},"workload":{"count":1}}`))
	f.Add([]byte(`{"schema":"llmbench.summary/v1","requests":{"total":3,"failed":1,"succeeded":2},"latency_ms":{"ttft":{"count":2,"p99":1e308}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := ParseSummary(raw)
		if err != nil {
			if s != nil {
				t.Fatal("a summary and an error")
			}
			return
		}
		for name, v := range Scalars(s) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%s = %v stored", name, v)
			}
		}
		r := runOf(s, raw)
		if r.TraceFingerprint == "" {
			t.Fatal("no trace fingerprint")
		}
	})
}

// FuzzParseFlags: the command-line values history parses (--tag/--where, --since,
// --min-change) either parse or give an error that quotes a bounded, escaped input.
func FuzzParseFlags(f *testing.F) {
	for _, s := range []string{"branch=main", "7d", "36h", "2026-11-30", "3%", "0.03", "k=v=w", "=", "\x00"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		check := func(err error) {
			if err != nil && len(err.Error()) > 400 {
				t.Fatalf("error of %d bytes for a %d-byte input", len(err.Error()), len(s))
			}
			if err != nil && strings.ContainsAny(err.Error(), "\x00\n\r") {
				t.Fatalf("control characters in the error: %q", err.Error())
			}
		}
		tags, err := ParseTags([]string{s})
		check(err)
		for k, v := range tags {
			if !tagKey.MatchString(k) || v == "" {
				t.Fatalf("accepted tag %q=%q", k, v)
			}
		}
		_, err = ParseSince(s, now)
		check(err)
		v, err := ParseMinChange(s)
		check(err)
		if err == nil && (math.IsNaN(v) || v > 10) {
			t.Fatalf("min change %v from %q", v, s)
		}
	})
}
