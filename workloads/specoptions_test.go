package workloads

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// given is a Given that reports the flags named.
func given(flags ...string) func(string) bool {
	return func(f string) bool {
		for _, g := range flags {
			if g == f {
				return true
			}
		}
		return false
	}
}

func TestBuildSpecAppliesOnlyGivenFlags(t *testing.T) {
	o := SpecOptions{Preset: "rag", Seed: 7, Rate: 9, Duration: 30 * time.Second, MaxRequests: 5,
		PrefixTokens: 4096, PrefixZipf: 0.5, Correlation: 0.4,
		Given: given("seed", "duration", "prefix-tokens")}
	spec, err := BuildSpec(o)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Seed != 7 || spec.Duration() != 30*time.Second {
		t.Errorf("seed %d duration %v: want the given 7 and 30s", spec.Seed, spec.Duration())
	}
	if spec.Arrival.Rate != 1 || spec.MaxRequests != 0 {
		t.Errorf("rate %g max-requests %d: flags not given must keep the preset's 1 and 0", spec.Arrival.Rate, spec.MaxRequests)
	}
	c := spec.Classes[0]
	if c.Prefix == nil || c.Prefix.Tokens != 4096 || c.Prefix.Zipf != 1 || c.Correlation != 0 {
		t.Errorf("class %+v prefix %+v: want prefix tokens 4096 given, zipf 1 and correlation 0 kept", c, c.Prefix)
	}
}

func TestBuildSpecSessionsAndPrefixes(t *testing.T) {
	o := SpecOptions{Preset: "rag", PrefixGroups: 0, Turns: "fixed:3",
		NewInput: "fixed:100", Think: "fixed:500", TPOTMS: 15, MaxContext: 9000,
		Given: given("prefix-groups", "session-turns")}
	spec, err := BuildSpec(o)
	if err != nil {
		t.Fatal(err)
	}
	c := spec.Classes[0]
	if c.Prefix != nil {
		t.Errorf("prefix %+v: --prefix-groups 0 removes prefixes", c.Prefix)
	}
	s := c.Session
	if s == nil || s.Turns.Kind != Fixed || s.NewInput.Kind != Fixed || s.ThinkMS.Kind != Fixed || s.TPOTMS != 15 || s.MaxInput != 9000 {
		t.Fatalf("session %+v: want turns, new input and think from the options (the last two not given)", s)
	}
}

func TestBuildSpecSpecFile(t *testing.T) {
	var read string
	o := SpecOptions{Preset: "chat", SpecFile: "my.spec.json", Given: given("class"), Class: "mine",
		ReadSpec: func(p string) (Spec, error) { read = p; return Preset("code") }}
	spec, err := BuildSpec(o)
	if err != nil {
		t.Fatal(err)
	}
	if read != "my.spec.json" || spec.Classes[0].Name != "mine" || spec.Classes[0].Output.Mean != 700 {
		t.Errorf("read %q, class %+v: want the file's code class renamed mine", read, spec.Classes[0])
	}
	boom := errors.New("boom")
	o.ReadSpec = func(string) (Spec, error) { return Spec{}, boom }
	if _, err := BuildSpec(o); !errors.Is(err, boom) {
		t.Errorf("err %v: want the reader's", err)
	}
	o.ReadSpec = nil
	if _, err := BuildSpec(o); err == nil || !strings.Contains(err.Error(), "ReadSpec is nil") {
		t.Errorf("err %v: want the missing reader named", err)
	}
}

func TestBuildSpecErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    SpecOptions
		want string
	}{
		{"both", SpecOptions{Preset: "chat", SpecFile: "x", Given: given("preset")}, "give --preset or --spec, not both"},
		{"preset", SpecOptions{Preset: "nope"}, `unknown preset "nope"`},
		{"cv on poisson", SpecOptions{Preset: "chat", CV: 2, Given: given("cv")}, "--cv applies to --arrival gamma|onoff|ramp|diurnal, not poisson"},
		{"on on gamma", SpecOptions{Preset: "chat", Arrival: Gamma, On: time.Second, Given: given("arrival", "on")}, "--on applies to --arrival onoff, not gamma"},
		{"weights", SpecOptions{Preset: "mixed", Weights: "chat=1,nope=2", Given: given("weights")}, `--weights: "nope=2" is not CLASS=WEIGHT`},
		{"weight", SpecOptions{Preset: "mixed", Weights: "chat=-1", Given: given("weights")}, `--weights: weight "-1" of chat is not a number >= 0`},
		{"class", SpecOptions{Preset: "mixed", Class: "x", Given: given("class")}, "--class renames a single class; this spec has 5"},
		{"dist", SpecOptions{Preset: "chat", Input: "zzz", Given: given("input")}, "--input: "},
		{"think default", SpecOptions{Preset: "chat", Think: "zzz"}, "--think: "},
		{"prefix", SpecOptions{Preset: "chat", PrefixZipf: 2, Given: given("prefix-zipf")}, "--prefix-zipf needs shared prefixes: add --prefix-groups N"},
		{"session", SpecOptions{Preset: "chat", TPOTMS: 3, Given: given("tpot-ms")}, "--tpot-ms needs sessions: add --session-turns DIST"},
		{"validate", SpecOptions{Preset: "chat", Rate: -1, Given: given("rate")}, "rate"},
	} {
		_, err := BuildSpec(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

func TestBuildSpecReweights(t *testing.T) {
	spec, err := BuildSpec(SpecOptions{Preset: "mixed", Weights: " code=2 ,chat=1", Given: given("weights")})
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Classes) != 2 || spec.Classes[0].Name != "code" || spec.Classes[0].Weight != 2 || spec.Classes[1].Weight != 1 {
		t.Errorf("classes %+v: want code=2 then chat=1, the others dropped", spec.Classes)
	}
}
