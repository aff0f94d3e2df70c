package workloads

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/traces"
)

func TestGenerateDeterministicAndValid(t *testing.T) {
	for _, name := range PresetNames() {
		spec, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		spec.Arrival.Rate = 4
		spec.DurationS = 30
		a, err := Generate(spec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := Generate(spec)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: Generate is not deterministic", name)
		}
		// The output is a valid trace: it survives a write/read round trip.
		var buf bytes.Buffer
		if err := traces.WriteJSONL(&buf, a); err != nil {
			t.Fatal(err)
		}
		back, err := traces.Read(&buf, name, traces.ReadOptions{})
		if err != nil {
			t.Fatalf("%s: generated trace does not read back: %v", name, err)
		}
		if len(back) != len(a) {
			t.Fatalf("%s: %d requests read back of %d", name, len(back), len(a))
		}
		for i, r := range a {
			if r.ID != fmt.Sprintf("r%d", i+1) || r.Class == "" || r.InputTokens < 1 || r.OutputTokens < 1 || r.Arrival >= 30*time.Second {
				t.Fatalf("%s: bad request %+v", name, r)
			}
		}
	}
	if _, err := Preset("nope"); err == nil || !strings.Contains(err.Error(), "agentic, chat, code, mixed") {
		t.Fatalf("unknown preset error: %v", err)
	}
}

func TestMixedClassWeights(t *testing.T) {
	spec, _ := Preset("mixed")
	spec.Arrival.Rate = 20
	spec.DurationS = 500
	reqs, err := Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	st := traces.ComputeStats(reqs)
	want := map[string]float64{"chat": 0.35, "rag": 0.2, "summarization": 0.1, "code": 0.2, "reasoning": 0.15}
	for c, w := range want {
		within(t, c+" share", float64(st.Classes[c])/float64(st.Count), w, 0.015)
	}
	// Per-class length means follow the class (lognormal means, slightly lowered by the max clamp).
	sum := map[string]float64{}
	for _, r := range reqs {
		if r.Class == "reasoning" {
			sum["reasoning"] += float64(r.OutputTokens)
		}
		if r.Class == "chat" {
			sum["chat"] += float64(r.InputTokens)
		}
	}
	within(t, "reasoning mean output", sum["reasoning"]/float64(st.Classes["reasoning"]), 4000, 200)
	within(t, "chat mean input", sum["chat"]/float64(st.Classes["chat"]), 1300, 60)
}

func TestGenerateLengthMomentsAndRate(t *testing.T) {
	spec := Spec{Seed: 9, DurationS: 1000, Arrival: ArrivalSpec{Process: Gamma, Rate: 8, CV: 3},
		Classes: []ClassSpec{{Name: "x", Input: Dist{Kind: LogNormal, Mean: 1000, SD: 800},
			Output: Dist{Kind: Normal, Mean: 300, SD: 50}}}}
	reqs, err := Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	st := traces.ComputeStats(reqs)
	within(t, "rate", st.RatePerS, 8, 0.8)
	within(t, "burstiness", st.Burstiness, 3, 0.35)
	var in, out []float64
	for _, r := range reqs {
		in = append(in, float64(r.InputTokens))
		out = append(out, float64(r.OutputTokens))
	}
	m, sd := moments(in)
	within(t, "input mean", m, 1000, 30)
	within(t, "input sd", sd, 800, 60)
	m, sd = moments(out)
	within(t, "output mean", m, 300, 2)
	within(t, "output sd", sd, 50, 2)
}

func TestPrefixGroups(t *testing.T) {
	spec := Spec{Seed: 2, DurationS: 200, BlockTokens: 16, Arrival: ArrivalSpec{Process: Poisson, Rate: 10},
		Classes: []ClassSpec{{Name: "rag", Input: Dist{Kind: Fixed, Value: 40}, Output: Dist{Kind: Fixed, Value: 5},
			Prefix: &PrefixSpec{Groups: 5, Tokens: 40, Zipf: 1.5, Fraction: 0.8}}}}
	reqs, err := Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string]int{}
	with := 0
	for _, r := range reqs {
		if r.HashIDs == nil {
			if r.InputTokens != 40 {
				t.Fatalf("request without prefix has %d tokens", r.InputTokens)
			}
			continue
		}
		with++
		// 40 prefix tokens round up to 3 blocks of 16 = 48, plus 40 own tokens.
		if len(r.HashIDs) != 3 || r.InputTokens != 88 {
			t.Fatalf("prefixed request %+v", r)
		}
		groups[fmt.Sprint(r.HashIDs)]++
	}
	within(t, "prefix fraction", float64(with)/float64(len(reqs)), 0.8, 0.03)
	if len(groups) != 5 {
		t.Fatalf("%d groups used, want 5", len(groups))
	}
	// Zipf 1.5 over 5 groups: the first holds 1/H where H = sum k^-1.5 = 1.7604 -> 56.8%.
	within(t, "top group share", float64(groups["[1 2 3]"])/float64(with), 1/1.7604, 0.03)
	// Everybody after the first of a group reuses 48 tokens.
	st := traces.ComputeStatsBlocks(reqs, 16)
	within(t, "prefix reuse tokens", float64(st.PrefixReuseTokens), float64(48*(with-5)), 0)
}

func TestSessions(t *testing.T) {
	spec, _ := Preset("agentic")
	spec.DurationS = 600
	spec.Arrival.Rate = 0.5
	spec.BlockTokens = 64
	reqs, err := Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	bySession := map[string][]traces.Request{}
	for _, r := range reqs {
		if r.Session == "" || r.Turn < 1 {
			t.Fatalf("agentic request without a session: %+v", r)
		}
		bySession[r.Session] = append(bySession[r.Session], r)
	}
	// The agentic preset fans out to sub-agents and joins them (after), so turns are checked
	// against the turn they wait for first: each extends that turn's context and blocks.
	multi, joins, tools := 0, 0, 0
	for s, turns := range bySession {
		byTurn := map[int]traces.Request{}
		for _, r := range turns {
			if _, dup := byTurn[r.Turn]; dup {
				t.Fatalf("session %s: turn %d twice", s, r.Turn)
			}
			byTurn[r.Turn] = r
		}
		for k := 1; k <= len(turns); k++ {
			r, ok := byTurn[k]
			if !ok {
				t.Fatalf("session %s: turns not numbered 1..%d (no %d)", s, len(turns), k)
			}
			if len(r.HashIDs) != (r.InputTokens+63)/64 {
				t.Fatalf("session %s turn %d: %d hash ids for %d tokens", s, r.Turn, len(r.HashIDs), r.InputTokens)
			}
			if r.InputTokens > 65536 {
				t.Fatalf("context cap exceeded: %d", r.InputTokens)
			}
			if k == 1 {
				continue
			}
			multi++
			dep := k - 1
			if r.After != nil {
				dep = r.After[0]
				if len(r.After) > 1 {
					joins++
				}
			}
			prev := byTurn[dep]
			if r.InputTokens <= prev.InputTokens+prev.OutputTokens {
				t.Fatalf("session %s turn %d did not grow: %d after %d+%d", s, r.Turn, r.InputTokens, prev.InputTokens, prev.OutputTokens)
			}
			if !reflect.DeepEqual(r.HashIDs[:len(prev.HashIDs)], prev.HashIDs) {
				t.Fatalf("session %s turn %d does not extend the blocks of turn %d", s, r.Turn, dep)
			}
			if r.Arrival < prev.Arrival+r.Think+r.ToolDelay {
				t.Fatalf("session %s turn %d: think %v tool %v, arrival %v after %v", s, r.Turn, r.Think, r.ToolDelay, r.Arrival, prev.Arrival)
			}
			if r.ToolDelay > 0 {
				tools++
			}
		}
	}
	if joins == 0 || tools == 0 {
		t.Fatalf("the agentic preset made %d joins and %d tool delays", joins, tools)
	}
	if multi == 0 || len(bySession) < 200 {
		t.Fatalf("%d sessions, %d later turns", len(bySession), multi)
	}
	st := traces.ComputeStatsBlocks(reqs, 64)
	if st.PrefixReuse < 0.5 {
		t.Fatalf("growing contexts should be mostly cached; prefix reuse %.2f", st.PrefixReuse)
	}
}

func TestMaxRequestsAndEmpirical(t *testing.T) {
	spec := Spec{Seed: 1, DurationS: 100, MaxRequests: 7, Arrival: ArrivalSpec{Process: Poisson, Rate: 5},
		Classes: []ClassSpec{{Name: "e", Input: Dist{Kind: Empirical, From: "src.jsonl"}, Output: Dist{Kind: Empirical, From: "src.jsonl"}}}}
	if _, err := Generate(spec); err == nil {
		t.Fatal("unresolved empirical distribution accepted")
	}
	src := []traces.Request{{InputTokens: 11, OutputTokens: 3}, {InputTokens: 22, OutputTokens: 4}}
	loads := 0
	err := spec.ResolveEmpirical(func(path string) ([]traces.Request, error) {
		loads++
		if path != "src.jsonl" {
			t.Fatalf("loaded %q", path)
		}
		return src, nil
	})
	if err != nil || loads != 1 {
		t.Fatalf("resolve: %v, %d loads", err, loads)
	}
	reqs, err := Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 7 || reqs[6].ID != "r7" {
		t.Fatalf("max requests: %d", len(reqs))
	}
	for _, r := range reqs {
		if (r.InputTokens != 11 && r.InputTokens != 22) || (r.OutputTokens != 3 && r.OutputTokens != 4) {
			t.Fatalf("empirical drew %+v", r)
		}
	}
}

func TestSpecJSONRoundTripAndErrors(t *testing.T) {
	spec, _ := Preset("agentic")
	var buf bytes.Buffer
	if err := WriteSpec(&buf, spec); err != nil {
		t.Fatal(err)
	}
	back, err := ParseSpec(&buf, "a.json")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, spec) {
		t.Fatalf("spec round trip\n got %+v\nwant %+v", back, spec)
	}
	bad := map[string]string{
		`{"duration_s":10,"arrival":{"process":"poisson","rate":1},"classes":[]}`:                                                      "at least one class",
		`{"duration_s":0,"arrival":{"process":"poisson","rate":1},"classes":[{"name":"a","input":"5","output":"5"}]}`:                  "duration must be > 0",
		`{"duration_s":10,"arrival":{"process":"poisson","rate":1},"classes":[{"name":"a","input":"5"}]}`:                              "input and output",
		`{"duration_s":10,"arrival":{"process":"poisson","rate":1},"classes":[{"name":"a","input":"5","output":"5","colour":1}]}`:      "unknown field",
		`{"duration_s":10,"arrival":{"process":"poisson","rate":1},"classes":[{"name":"a","input":"5","output":"5","correlation":2}]}`: "correlation",
		"{\n\"duration_s\":10,\n,}": "a.json:3",
	}
	for in, want := range bad {
		if _, err := ParseSpec(strings.NewReader(in), "a.json"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}
