package workloads

import (
	"encoding/json"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func draw(t *testing.T, d Dist, n int) []float64 {
	t.Helper()
	s, err := d.compile()
	if err != nil {
		t.Fatal(err)
	}
	r := newRNG(11, 99)
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(s.at(r.norm()))
	}
	return out
}

func moments(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)))
}

func TestDistMoments(t *testing.T) {
	const n = 40000
	cases := []struct {
		text           string
		mean, sd       float64
		meanTol, sdTol float64
		lo, hi         float64
	}{
		{"fixed:512", 512, 0, 0, 0, 512, 512},
		{"uniform:100-1500", 800, 1401 / math.Sqrt(12), 8, 8, 100, 1500},
		{"normal:mean=500,sd=100", 500, 100, 2, 2, 0, 1e9},
		{"lognormal:mean=800,sd=600", 800, 600, 12, 25, 1, 1e9},
		{"lognormal:mean=200,sd=50,min=150,max=220", 0, 0, -1, -1, 150, 220},
	}
	for _, c := range cases {
		d, err := ParseDist(c.text)
		if err != nil {
			t.Fatal(err)
		}
		xs := draw(t, d, n)
		mean, sd := moments(xs)
		if c.meanTol >= 0 {
			within(t, c.text+" mean", mean, c.mean, c.meanTol)
			within(t, c.text+" sd", sd, c.sd, c.sdTol)
		}
		for _, x := range xs {
			if x < c.lo || x > c.hi || x != math.Trunc(x) {
				t.Fatalf("%s drew %v outside [%v, %v]", c.text, x, c.lo, c.hi)
			}
		}
	}
	// zipf s=1 on [1, 10]: P(1) = 1/H(10) = 0.3414, P(2) = half of that.
	xs := draw(t, Dist{Kind: Zipf, S: 1, Min: 1, Max: 10}, n)
	var ones, twos float64
	for _, x := range xs {
		switch x {
		case 1:
			ones++
		case 2:
			twos++
		}
	}
	within(t, "zipf P(1)", ones/n, 0.3414, 0.01)
	within(t, "zipf P(2)", twos/n, 0.1707, 0.01)
	// empirical resamples the given values with their frequencies.
	xs = draw(t, Dist{Kind: Empirical, Values: []int{10, 10, 10, 40}}, n)
	var tens float64
	for _, x := range xs {
		if x == 10 {
			tens++
		} else if x != 40 {
			t.Fatalf("empirical drew %v", x)
		}
	}
	within(t, "empirical P(10)", tens/n, 0.75, 0.01)
}

func TestCopulaCorrelation(t *testing.T) {
	spec := Spec{Seed: 3, DurationS: 4000, Arrival: ArrivalSpec{Process: Poisson, Rate: 5},
		Classes: []ClassSpec{{Name: "c", Input: Dist{Kind: LogNormal, Mean: 800, SD: 600},
			Output: Dist{Kind: LogNormal, Mean: 200, SD: 150}, Correlation: 0.8}}}
	reqs, err := Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	in := make([]float64, len(reqs))
	out := make([]float64, len(reqs))
	for i, r := range reqs {
		in[i], out[i] = float64(r.InputTokens), float64(r.OutputTokens)
	}
	// Spearman's rho of a Gaussian copula with correlation 0.8 is (6/π)·asin(0.4) = 0.786.
	within(t, "rank correlation", spearman(in, out), 6/math.Pi*math.Asin(0.4), 0.02)
	spec.Classes[0].Correlation = 0
	reqs, _ = Generate(spec)
	for i, r := range reqs {
		in[i], out[i] = float64(r.InputTokens), float64(r.OutputTokens)
	}
	within(t, "independent rank correlation", spearman(in[:len(reqs)], out[:len(reqs)]), 0, 0.03)
}

func ranks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	r := make([]float64, len(xs))
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && xs[idx[j]] == xs[idx[i]] {
			j++
		}
		for k := i; k < j; k++ {
			r[idx[k]] = float64(i+j-1) / 2
		}
		i = j
	}
	return r
}

func spearman(a, b []float64) float64 {
	ra, rb := ranks(a), ranks(b)
	ma, sa := moments(ra)
	mb, sb := moments(rb)
	var cov float64
	for i := range ra {
		cov += (ra[i] - ma) * (rb[i] - mb)
	}
	return cov / float64(len(ra)) / (sa * sb)
}

func TestParseDist(t *testing.T) {
	good := map[string]Dist{
		"512":                                {Kind: Fixed, Value: 512},
		"fixed:64":                           {Kind: Fixed, Value: 64},
		"uniform:100-1500":                   {Kind: Uniform, Min: 100, Max: 1500},
		"uniform:min=3,max=12":               {Kind: Uniform, Min: 3, Max: 12},
		"normal:mean=500,sd=100":             {Kind: Normal, Mean: 500, SD: 100},
		"lognormal:mean=800,sd=600,max=8192": {Kind: LogNormal, Mean: 800, SD: 600, Max: 8192},
		"zipf:s=1.2,min=1,max=4000":          {Kind: Zipf, S: 1.2, Min: 1, Max: 4000},
		"empirical:traces/x.jsonl":           {Kind: Empirical, From: "traces/x.jsonl"},
		"empirical:values=1;2;3":             {Kind: Empirical, Values: []int{1, 2, 3}},
	}
	for text, want := range good {
		got, err := ParseDist(text)
		if err != nil {
			t.Errorf("%s: %v", text, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s -> %+v, want %+v", text, got, want)
		}
		back, err := ParseDist(got.String())
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("String round trip of %s: %q -> %+v %v", text, got.String(), back, err)
		}
		b, _ := json.Marshal(got)
		var j Dist
		if err := json.Unmarshal(b, &j); err != nil || !reflect.DeepEqual(j, got) {
			t.Errorf("JSON round trip of %s: %s -> %+v %v", text, b, j, err)
		}
	}
	bad := map[string]string{
		"gauss:mean=1":               "unknown kind",
		"uniform:100":                "MIN-MAX",
		"uniform:9-3":                "max must be >= min",
		"lognormal:mean=0,sd=1":      "mean > 0",
		"normal:mean=1,sd=-1":        "sd >= 0",
		"zipf:s=1":                   "max > 0",
		"lognormal:mean=x":           "not a number",
		"lognormal:mean=5,shape=2":   "unknown parameter",
		"zipf:s=1,min=0,max=9999999": "fewer than",
	}
	for text, want := range bad {
		if _, err := ParseDist(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to mention %q", text, err, want)
		}
	}
	var d Dist
	if err := json.Unmarshal([]byte(`{"kind":"lognormal","mean":5,"sd":1,"bogus":1}`), &d); err == nil {
		t.Error("unknown JSON field accepted")
	}
	if _, err := (Dist{Kind: Empirical, From: "x.jsonl"}).compile(); err == nil || !strings.Contains(err.Error(), "not loaded") {
		t.Errorf("unresolved empirical: %v", err)
	}
}
