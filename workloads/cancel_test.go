package workloads

import (
	"math"
	"strings"
	"testing"
	"time"
)

func cancelSpec(seed int64, cancel string) Spec {
	spec, err := Preset("chat")
	if err != nil {
		panic(err)
	}
	spec.Seed = seed
	spec.Arrival.Rate = 50
	spec.SetDuration(40 * time.Second)
	if cancel != "" {
		c, err := ParseCancel(cancel)
		if err != nil {
			panic(err)
		}
		spec.Cancel = c
	}
	return spec
}

// TestCancelShareOverSeeds: over 40 seeds of about 2,000 requests, the share of requests
// cancelled stays within 4.5 standard errors of --cancel's share in every trial and its mean
// within 3 standard errors of the pooled count; every delay is inside the distribution's
// range; and adding --cancel leaves every arrival and length as they were.
func TestCancelShareOverSeeds(t *testing.T) {
	const share = 0.1
	var total, cancelled int
	for seed := int64(1); seed <= 40; seed++ {
		plain, err := Generate(cancelSpec(seed, ""))
		if err != nil {
			t.Fatal(err)
		}
		reqs, err := Generate(cancelSpec(seed, "0.1:uniform:200-2000"))
		if err != nil {
			t.Fatal(err)
		}
		if len(reqs) != len(plain) {
			t.Fatalf("seed %d: %d requests with --cancel, %d without", seed, len(reqs), len(plain))
		}
		n := 0
		for i, r := range reqs {
			p := plain[i]
			if r.Arrival != p.Arrival || r.InputTokens != p.InputTokens || r.OutputTokens != p.OutputTokens || p.CancelAfter != 0 {
				t.Fatalf("seed %d request %d: --cancel changed the request: %+v vs %+v", seed, i, r, p)
			}
			if r.CancelAfter == 0 {
				continue
			}
			n++
			if r.CancelAfter < 200*time.Millisecond || r.CancelAfter > 2000*time.Millisecond || r.CancelAfter%time.Millisecond != 0 {
				t.Fatalf("seed %d: delay %v outside uniform:200-2000 ms", seed, r.CancelAfter)
			}
		}
		se := math.Sqrt(share * (1 - share) / float64(len(reqs)))
		if got := float64(n) / float64(len(reqs)); math.Abs(got-share) > 4.5*se {
			t.Errorf("seed %d: %d of %d cancelled (%.4f), want %.2f ± %.4f", seed, n, len(reqs), got, share, 4.5*se)
		}
		total += len(reqs)
		cancelled += n
	}
	se := math.Sqrt(share * (1 - share) / float64(total))
	if got := float64(cancelled) / float64(total); math.Abs(got-share) > 3*se {
		t.Errorf("pooled: %d of %d cancelled (%.4f), want %.2f ± %.4f", cancelled, total, got, share, 3*se)
	}
	a, _ := Generate(cancelSpec(7, "0.3:lognormal:mean=800,sd=400"))
	b, _ := Generate(cancelSpec(7, "0.3:lognormal:mean=800,sd=400"))
	for i := range a {
		if a[i].CancelAfter != b[i].CancelAfter {
			t.Fatalf("request %d: the same seed drew %v and %v", i, a[i].CancelAfter, b[i].CancelAfter)
		}
	}
}

// TestParseCancel: the accepted forms and the errors that say what is wrong.
func TestParseCancel(t *testing.T) {
	c, err := ParseCancel(" 0.25:lognormal:mean=800,sd=400 ")
	if err != nil || c.Share != 0.25 || c.DelayMS.Kind != LogNormal || c.DelayMS.Mean != 800 {
		t.Fatalf("got %+v, %v", c, err)
	}
	if back, err := ParseCancel(c.String()); err != nil || back.String() != c.String() {
		t.Errorf("String %q does not parse back: %+v %v", c.String(), back, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"0.1", "want SHARE:DELAY-DISTRIBUTION"},
		{"x:uniform:1-2", `the share "x" is not a number`},
		{"0:uniform:1-2", "must be in (0, 1]"},
		{"1.5:300", "must be in (0, 1]"},
		{"NaN:300", "must be in (0, 1]"},
		{"0.1:gauss:3", "unknown kind"},
		{"0.1:", "want SHARE:DELAY-DISTRIBUTION"},
	} {
		if _, err := ParseCancel(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
	opts := SpecOptions{Preset: "chat", Cancel: "2:100", Given: func(f string) bool { return f == "cancel" }}
	if _, err := BuildSpec(opts); err == nil || !strings.HasPrefix(err.Error(), "--cancel: ") {
		t.Errorf("BuildSpec with a bad --cancel: %v, want an error naming the flag", err)
	}
}
