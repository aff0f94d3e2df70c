package workloads

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Over many seeded traces, each model's share of arrivals is its weight's share within
// sampling error (a binomial's 4.5 standard deviations: a false alarm in about 1 in 150,000
// seeds per model), and the models leave everything else of the trace as it was.
func TestModelMixProportions(t *testing.T) {
	mix := "base=6,sql-lora=3,chat-lora=1"
	want := map[string]float64{"base": 0.6, "sql-lora": 0.3, "chat-lora": 0.1}
	for seed := int64(1); seed <= 40; seed++ {
		o := SpecOptions{Preset: "chat", Seed: seed, Rate: 20, Duration: 50 * time.Second, Models: mix,
			Given: func(f string) bool { return f == "seed" || f == "rate" || f == "duration" || f == "models" }}
		spec, err := BuildSpec(o)
		if err != nil {
			t.Fatal(err)
		}
		reqs, err := Generate(spec)
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for _, r := range reqs {
			count[r.Model]++
		}
		n := float64(len(reqs))
		for m, p := range want {
			sd := math.Sqrt(n * p * (1 - p))
			if d := math.Abs(float64(count[m]) - n*p); d > 4.5*sd {
				t.Errorf("seed %d: %s drawn %d of %.0f times, want %.0f ± %.0f", seed, m, count[m], n, n*p, 4.5*sd)
			}
		}
		if len(count) != 3 {
			t.Errorf("seed %d: models %v", seed, count)
		}
		o.Given = func(f string) bool { return f == "seed" || f == "rate" || f == "duration" }
		plainSpec, err := BuildSpec(o)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := Generate(plainSpec)
		if err != nil {
			t.Fatal(err)
		}
		for i := range reqs {
			reqs[i].Model = ""
		}
		if !reflect.DeepEqual(plain, reqs) {
			t.Fatalf("seed %d: the model mix changed the rest of the trace", seed)
		}
	}
}

// Every turn of a session goes to its session's model.
func TestModelPerSession(t *testing.T) {
	spec, err := BuildSpec(SpecOptions{Preset: "chat", Rate: 2, Duration: 60 * time.Second, Turns: "uniform:min=2,max=5", NewInput: "lognormal:mean=300,sd=200,max=4000", Think: "lognormal:mean=3000,sd=2000,max=30000", Models: "a=1,b=1",
		Given: func(f string) bool { return f == "rate" || f == "duration" || f == "session-turns" || f == "models" }})
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	of := map[string]string{}
	models := map[string]bool{}
	for _, r := range reqs {
		if r.Session == "" {
			t.Fatalf("request %s has no session", r.ID)
		}
		if m, ok := of[r.Session]; ok && m != r.Model {
			t.Fatalf("session %s: turns to %s and %s", r.Session, m, r.Model)
		}
		of[r.Session] = r.Model
		models[r.Model] = true
	}
	if !models["a"] || !models["b"] || len(models) != 2 {
		t.Errorf("models drawn: %v", models)
	}
}

func TestParseModelsErrors(t *testing.T) {
	for in, want := range map[string]string{
		"base=6,sql=x":   `--models: entry "sql=x": the weight "x" is not a positive number`,
		"base=0":         `--models: entry "base=0": the weight "0" is not a positive number`,
		"base=-1":        `the weight "-1" is not a positive number`,
		"base=NaN":       `the weight "NaN" is not a positive number`,
		"base":           `--models: entry "base" is not NAME=WEIGHT`,
		"=3":             `entry "=3" is not NAME=WEIGHT`,
		"a=1,a=2":        `--models: model "a" appears twice`,
		"base=6,,sql=1":  `entry "" is not NAME=WEIGHT`,
		"a\x01b=1":       `must be UTF-8 without control characters`,
		"base=Inf,sql=1": `the weight "Inf" is not a positive number`,
	} {
		_, err := ParseModels("--models", in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseModels(%q): %v, want %q", in, err, want)
		}
	}
	got, err := ParseModels("--models", "base=6, sql-lora=3 ,chat-lora=0.5")
	if err != nil || !reflect.DeepEqual(got, []ModelWeight{{"base", 6}, {"sql-lora", 3}, {"chat-lora", 0.5}}) {
		t.Errorf("ParseModels: %v, %v", got, err)
	}
	// A spec file's class with a bad mix is refused by Validate, naming the class.
	spec, err := Preset("chat")
	if err != nil {
		t.Fatal(err)
	}
	spec.Classes[0].Models = []ModelWeight{{Name: "a", Weight: 0}}
	if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), "models[0] (a): weight must be a positive number") {
		t.Errorf("Validate: %v", err)
	}
}

// FuzzParseModels: any --models text is a mix that validates or an error naming the flag.
func FuzzParseModels(f *testing.F) {
	for _, s := range []string{"base=6,sql-lora=3,chat-lora=1", "a=0", "a=1e308,b=1e-308", "=", ",", "a=NaN", "x=1,x=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseModels("--models", s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--models") && !strings.HasPrefix(err.Error(), "models[") {
				t.Fatalf("error does not name the flag: %v", err)
			}
			return
		}
		if len(ms) == 0 || checkModels(ms) != nil {
			t.Fatalf("accepted %q as %v", s, ms)
		}
		if modelCDF(ms)[len(ms)-1] != 1 {
			t.Fatalf("cdf of %v does not end at 1", ms)
		}
	})
}
