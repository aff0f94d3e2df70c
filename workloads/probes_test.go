package workloads

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

func probes(t *testing.T, p ProbeSpec) []traces.Request {
	t.Helper()
	if p.Arrival.Process == "" {
		p.Arrival = ArrivalSpec{Process: Poisson, Rate: 10}
	}
	if p.Duration == 0 {
		p.Duration = time.Hour
	}
	reqs, err := GenerateProbes(p)
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

// TestProbesShape: every probe is a graded chat request whose input_tokens is its prompt's
// reference count, arrivals increase, the trace is a pure function of the spec, and every
// request passes the trace validator (written and read back).
func TestProbesShape(t *testing.T) {
	var tok tokenizer.Reference
	for _, preset := range ProbePresets {
		p := ProbeSpec{Preset: preset, Seed: 3, MaxRequests: 40, Lengths: []int{512, 2048}}
		reqs := probes(t, p)
		if len(reqs) != 40 || !reflect.DeepEqual(reqs, probes(t, p)) {
			t.Fatalf("%s: %d requests, or not deterministic", preset, len(reqs))
		}
		var buf strings.Builder
		if err := traces.WriteJSONL(&buf, reqs); err != nil {
			t.Fatal(err)
		}
		back, err := traces.Read(strings.NewReader(buf.String()), "probe.jsonl", traces.ReadOptions{})
		if err != nil || len(back) != len(reqs) {
			t.Fatalf("%s: the trace does not read back: %v", preset, err)
		}
		for i, r := range reqs {
			n := 0
			for _, m := range r.Messages {
				n += tok.Count(m.Content)
			}
			if n != r.InputTokens || len(r.Expect) == 0 || r.Temperature == nil || *r.Temperature != 0 || (i > 0 && r.Arrival < reqs[i-1].Arrival) {
				t.Fatalf("%s %s: %d prompt tokens, input_tokens %d, %d checks", preset, r.ID, n, r.InputTokens, len(r.Expect))
			}
		}
	}
}

func TestLongContextProbe(t *testing.T) {
	reqs := probes(t, ProbeSpec{Preset: "long-context-probe", Seed: 1, MaxRequests: 12, Lengths: []int{1024, 8192}})
	seen := map[string]bool{}
	var tok tokenizer.Reference
	for _, r := range reqs {
		seen[r.Class] = true
		text := r.Messages[0].Content
		want := r.Expect[0].Values[0]
		at := strings.Index(text, " is "+want+".")
		q := strings.LastIndex(text, "What is the order number for customer ")
		if at < 0 || q < at || strings.Count(text, "The order number for customer ") != 3 {
			t.Fatalf("%s: fact %s not planted before the question", r.ID, want)
		}
		depth := float64(at) / float64(q)
		pos := r.Class[strings.LastIndex(r.Class, "/")+1:]
		if band := map[string][2]float64{"begin": {0, 0.2}, "middle": {0.4, 0.6}, "end": {0.8, 1}}[pos]; depth < band[0] || depth > band[1] {
			t.Errorf("%s (%s): the fact is at depth %.2f", r.ID, r.Class, depth)
		}
		length := 1024
		if strings.HasPrefix(r.Class, "lc-8k/") {
			length = 8192
		}
		if n := tok.Count(text); n < length*95/100 || n > length*105/100 {
			t.Errorf("%s (%s): %d tokens", r.ID, r.Class, n)
		}
	}
	for _, c := range []string{"lc-1k/begin", "lc-1k/middle", "lc-1k/end", "lc-8k/begin", "lc-8k/middle", "lc-8k/end"} {
		if !seen[c] {
			t.Errorf("no request of class %s (have %v)", c, seen)
		}
	}
}

// TestProbeTools: 20 tools with distinct names and descriptions, nested parameters, valid
// JSON; every kind of tool task appears, and each task's expected call names a tool.
func TestProbeTools(t *testing.T) {
	var tools []struct {
		Function struct {
			Name, Description string
			Parameters        map[string]any
		}
	}
	if err := json.Unmarshal(ProbeTools(), &tools); err != nil || len(tools) != 20 {
		t.Fatalf("%d tools: %v", len(tools), err)
	}
	names, descs, nested := map[string]bool{}, map[string]bool{}, 0
	for _, tl := range tools {
		f := tl.Function
		d := strings.ToLower(f.Description)
		for other := range descs {
			if strings.Contains(d, other) || strings.Contains(other, d) {
				t.Errorf("descriptions %q and %q overlap: a task could not name one", d, other)
			}
		}
		names[f.Name], descs[d] = true, true
		for _, p := range f.Parameters["properties"].(map[string]any) {
			if p.(map[string]any)["type"] == "object" {
				nested++
			}
		}
	}
	if len(names) != 20 || nested < 5 {
		t.Errorf("%d distinct names, %d nested object parameters", len(names), nested)
	}
	classes := map[string]int{}
	for _, r := range probes(t, ProbeSpec{Preset: "tool-calling", Seed: 2, MaxRequests: 80}) {
		classes[r.Class]++
		if !names[r.Expect[0].Name] || r.Expect[1].Arguments == nil {
			t.Fatalf("%s: expect %+v", r.ID, r.Expect)
		}
		if r.Class == "tool/retry" && !strings.HasPrefix(r.Messages[2].Content, "Error from "+r.Expect[0].Name) {
			t.Errorf("%s: retry without an error message: %v", r.ID, r.Messages)
		}
		if r.Class == "tool/step2" && !strings.Contains(r.Messages[2].Content, string(mustField(t, r.Expect[1].Arguments, "customerId"))) {
			t.Errorf("%s: the second step's customerId is not in the first step's result", r.ID)
		}
	}
	for _, c := range []string{"tool/first", "tool/retry", "tool/step1", "tool/step2"} {
		if classes[c] != 20 {
			t.Errorf("%d requests of %s, want 20 of 80", classes[c], c)
		}
	}
}

func mustField(t *testing.T, raw json.RawMessage, k string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m[k] == nil {
		t.Fatalf("%s has no %s", raw, k)
	}
	return m[k]
}

// TestTemperatureSweep: each probe repeats at every temperature, Samples times with seeds
// 1..Samples, next to each other in time, and the class names the temperature.
func TestTemperatureSweep(t *testing.T) {
	reqs := probes(t, ProbeSpec{Preset: "json-output", Seed: 1, MaxRequests: 24, Temperatures: []float64{0, 1}, Samples: 3})
	for i, r := range reqs {
		probe, rep := i/6, i%6
		wantT := []float64{0, 1}[rep/3]
		if *r.Temperature != wantT || *r.Seed != int64(rep%3+1) || !strings.HasSuffix(r.Class, "/t="+map[float64]string{0: "0", 1: "1"}[wantT]) {
			t.Fatalf("%s: temperature %v seed %v class %s", r.ID, *r.Temperature, *r.Seed, r.Class)
		}
		if r.Messages[0].Content != reqs[probe*6].Messages[0].Content {
			t.Fatalf("%s: the repeats of probe %d differ", r.ID, probe)
		}
	}
	if _, err := GenerateProbes(ProbeSpec{Preset: "json-output", Arrival: ArrivalSpec{Process: Poisson, Rate: 1}, Duration: time.Minute, Temperatures: []float64{3}}); err == nil {
		t.Error("temperature 3 accepted")
	}
}
