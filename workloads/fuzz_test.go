package workloads

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmbench/llmbench/traces"
)

func FuzzParseSpec(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(examplesDir, "*.spec.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, name := range PresetNames() {
		spec, _ := Preset(name)
		var buf bytes.Buffer
		if err := WriteSpec(&buf, spec); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := ParseSpec(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			return
		}
		if err := spec.Validate(); err != nil {
			t.Fatalf("ParseSpec accepted a spec Validate rejects: %v", err)
		}
		mean := spec.Arrival.Rate
		if spec.Arrival.Process == Ramp {
			mean = (spec.Arrival.Rate + spec.Arrival.RateEnd) / 2
		}
		if mean*spec.DurationS > 50 {
			return // keep each run cheap
		}
		for _, c := range spec.Classes {
			if c.Session != nil || (c.Prefix != nil && c.Prefix.Groups > 1000) {
				return
			}
		}
		reqs, err := Generate(spec)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := traces.WriteJSONL(&buf, reqs); err != nil {
			t.Fatal(err)
		}
		if _, err := traces.Read(&buf, "generated", traces.ReadOptions{}); err != nil {
			t.Fatalf("generated trace is invalid: %v", err)
		}
	})
}

func FuzzParseDist(f *testing.F) {
	for _, s := range []string{"512", "fixed:64", "uniform:100-1500", "normal:mean=500,sd=100", "lognormal:mean=800,sd=600,min=1,max=8192",
		"zipf:s=1.2,min=1,max=4000", "empirical:values=1;2;3", "empirical:trace.jsonl", "uniform:min=3,max=12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDist(s)
		if err != nil {
			return
		}
		back, err := ParseDist(d.String())
		if err != nil {
			t.Fatalf("%q -> %q does not parse back: %v", s, d.String(), err)
		}
		if back.String() != d.String() {
			t.Fatalf("%q -> %q -> %q", s, d.String(), back.String())
		}
		if len(d.Values) == 0 && d.Kind == Empirical {
			return
		}
		smp, err := d.compile()
		if err != nil {
			t.Fatalf("%q parsed but does not compile: %v", s, err)
		}
		for _, z := range []float64{-40, -3, -0.5, 0, 0.5, 3, 40} {
			if v := smp.at(z); v < d.Min || (d.Max > 0 && v > d.Max) || v < 0 {
				t.Fatalf("%q at z=%v gave %d outside [%d, %d]", s, z, v, d.Min, d.Max)
			}
		}
	})
}

// FuzzParseCancel: gen --cancel never panics, and what it accepts prints back to itself.
func FuzzParseCancel(f *testing.F) {
	for _, s := range []string{"0.1:uniform:200-2000", "1:500", "0.25:lognormal:mean=800,sd=400", "0.5:empirical:values=1;2", "x:1", "0.1:", "-1:2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCancel(s)
		if err != nil {
			return
		}
		if !(c.Share > 0 && c.Share <= 1) {
			t.Fatalf("%q: accepted share %v", s, c.Share)
		}
		back, err := ParseCancel(c.String())
		if err != nil || back.String() != c.String() {
			t.Fatalf("%q -> %q does not parse back: %v", s, c.String(), err)
		}
	})
}
