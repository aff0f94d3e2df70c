package refengine

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// One request alone: an adapter's TTFT exceeds the base model's by exactly its load time plus
// the low-rank matmuls of the prefill step, priced by the formulas of lora.go.
func TestLoRALoneRequestCost(t *testing.T) {
	cfg := Config{Seed: 1, LoRAs: []LoRA{{Name: "sql", Rank: 32}}}
	r, err := cfg.resolve()
	if err != nil {
		t.Fatal(err)
	}
	a := r.lora.adapters[0]
	if want := 2.0 * 32 * 4096 * 32 * 7 * 2; a.bytes != want {
		t.Fatalf("adapter bytes %g, want %g", a.bytes, want)
	}
	if want := time.Duration(a.bytes / 64e9 * 1e9); a.load != want { // H100 SXM: PCIe Gen5, 64 GB/s a direction
		t.Fatalf("load %v, want %v", a.load, want)
	}
	run := func(model string) (ttft time.Duration, st SimStats) {
		res, err := Simulate([]SimRequest{{ID: "x", PromptTokens: 1000, MaxTokens: 4, Model: model}}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		tl := res.Timelines[0]
		return tl.Emissions[0].At - tl.Arrival, res.Stats
	}
	base, bst := run("")
	lora, lst := run("sql")
	mm := time.Duration(max(1000*a.flops*r.lora.secPerFLOP, a.bytes*r.lora.secPerByte) * 1e9)
	if got, want := lora-base, a.load+mm; got != want {
		t.Errorf("adapter TTFT - base TTFT = %v, want load %v + matmuls %v", got, a.load, mm)
	}
	if bst.LoRALoads != 0 || lst.LoRALoads != 1 || lst.LoRAEvictions != 0 || lst.LoRALoadTime != a.load {
		t.Errorf("stats: base %+v, adapter %+v", bst, lst)
	}
}

// One slot, requests alternating between two adapters one after another: every request after
// the first swaps; with two slots each adapter loads once.
func TestLoRASwapsCountedInSimulate(t *testing.T) {
	var reqs []SimRequest
	for i := 0; i < 10; i++ {
		reqs = append(reqs, SimRequest{ID: fmt.Sprint(i), Arrival: time.Duration(i) * time.Second,
			PromptTokens: 100, MaxTokens: 8, Model: []string{"a", "b"}[i%2]})
	}
	for _, c := range []struct{ slots, loads, evictions int64 }{{1, 10, 9}, {2, 2, 0}} {
		cfg := Config{Seed: 1, LoRAs: []LoRA{{Name: "a"}, {Name: "b"}}, MaxLoRAs: int(c.slots)}
		res, err := Simulate(reqs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Stats.LoRALoads != c.loads || res.Stats.LoRAEvictions != c.evictions {
			t.Errorf("%d slots: %d loads, %d evictions; want %d and %d", c.slots, res.Stats.LoRALoads, res.Stats.LoRAEvictions, c.loads, c.evictions)
		}
	}
	reqs[3].Model = "c"
	_, err := Simulate(reqs, Config{LoRAs: []LoRA{{Name: "a"}, {Name: "b"}}})
	if !errors.Is(err, ErrUnknownModel) || !strings.Contains(err.Error(), `request 3 (3): model "c"`) {
		t.Errorf("unknown model: %v", err)
	}
}

func TestParseLoRAAndConfigErrors(t *testing.T) {
	for in, want := range map[string]LoRA{"sql": {Name: "sql"}, "sql:64": {Name: "sql", Rank: 64}, "org/x:8": {Name: "org/x", Rank: 8}} {
		got, err := ParseLoRA(in)
		if err != nil || got != want {
			t.Errorf("ParseLoRA(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", ":8", "sql:", "sql:0", "sql:x", "sql:-3", "sql:99999", " sql"} {
		if _, err := ParseLoRA(bad); err == nil || !strings.Contains(err.Error(), "--lora") {
			t.Errorf("ParseLoRA(%q): %v, want an error naming --lora", bad, err)
		}
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxLoRAs: 2}, "MaxLoRAs 2 needs adapters"},
		{Config{LoRAs: []LoRA{{Name: "a"}, {Name: "a"}}}, `the name "a" is taken`},
		{Config{LoRAs: []LoRA{{Name: "llama-3.1-8b"}}}, "is taken"},
		{Config{LoRAs: []LoRA{{Name: "a"}}, MaxLoRAs: -1}, "slots"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// The engine answers adapter names, lists them in /v1/models and refuses other names as vLLM
// does.
func TestLoRAOverHTTPNames(t *testing.T) {
	_, url := startEngine(t, Config{LoRAs: []LoRA{{Name: "sql-lora", Rank: 8}, {Name: "chat-lora"}}, MaxLoRAs: 1, TimeScale: 1000})
	for _, model := range []string{"llama-3.1-8b", "sql-lora", "chat-lora"} {
		resp, body := post(t, url+"/v1/completions", `{"model":"`+model+`","prompt":"x","max_tokens":2}`)
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"model":"`+model+`"`) {
			t.Errorf("model %s: %d %s", model, resp.StatusCode, body)
		}
	}
	resp, body := post(t, url+"/v1/chat/completions", `{"model":"sql","messages":[{"role":"user","content":"x"}]}`)
	if want := "{\"error\":{\"message\":\"The model `sql` does not exist.\",\"type\":\"NotFoundError\",\"param\":\"model\",\"code\":404}}\n"; resp.StatusCode != 404 || string(body) != want {
		t.Errorf("unknown model: %d %s, want 404 %s", resp.StatusCode, body, want)
	}
	r, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var list struct {
		Data []struct {
			ID, Root string
			Parent   *string
		}
	}
	if err := json.NewDecoder(r.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != 3 || list.Data[0].ID != "llama-3.1-8b" || list.Data[0].Parent != nil ||
		list.Data[1].ID != "sql-lora" || *list.Data[1].Parent != "llama-3.1-8b" || list.Data[2].ID != "chat-lora" {
		t.Errorf("/v1/models: %+v", list.Data)
	}
}

// FuzzParseLoRA: any --lora text is an adapter New accepts or an error naming the flag.
func FuzzParseLoRA(f *testing.F) {
	for _, s := range []string{"sql", "sql:64", "a:b:c", ":", "x:0", "x:1024", "x:1025", "org/name:16"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLoRA(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--lora") {
				t.Fatalf("error does not name the flag: %v", err)
			}
			return
		}
		if l.Name == "llama-3.1-8b" {
			return // the base model's name: New refuses it as taken
		}
		if _, err := (Config{LoRAs: []LoRA{l}}).resolve(); err != nil {
			t.Fatalf("ParseLoRA(%q) = %+v, which the engine refuses: %v", s, l, err)
		}
	})
}
