package engineadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/workloads"
)

// probeTrace generates n requests of a probe preset.
func probeTrace(t *testing.T, preset string, n int, lengths []int) []traces.Request {
	t.Helper()
	reqs, err := workloads.GenerateProbes(workloads.ProbeSpec{Preset: preset, Seed: 1, MaxRequests: n, Lengths: lengths,
		Arrival: workloads.ArrivalSpec{Process: workloads.Poisson, Rate: 20}, Duration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

// passes grades an output against the probe's checks (contains, tool_call name and
// arguments, json_schema as "parses"): enough to hold the engine's answers to the probes.
func passes(r *traces.Request, o *refengine.Output) (bool, string) {
	for _, c := range r.Expect {
		switch c.Kind {
		case traces.CheckContains:
			for _, v := range c.Values {
				if !strings.Contains(o.Content, v) {
					return false, "missing " + v + " in " + o.Content
				}
			}
		case traces.CheckJSONSchema:
			if !json.Valid([]byte(o.Content)) {
				return false, "not JSON: " + o.Content
			}
		case traces.CheckToolCall:
			if len(o.ToolCalls) != 1 || o.ToolCalls[0].Name != c.Name {
				return false, fmt.Sprintf("calls %+v, want %s", o.ToolCalls, c.Name)
			}
			if c.Arguments != nil {
				var got, want any
				d := json.NewDecoder(strings.NewReader(o.ToolCalls[0].Arguments))
				if d.Decode(&got) != nil {
					return false, "arguments do not parse: " + o.ToolCalls[0].Arguments
				}
				json.NewDecoder(bytes.NewReader(c.Arguments)).Decode(&want)
				if !reflect.DeepEqual(got, want) {
					return false, fmt.Sprintf("arguments %s, want %s", o.ToolCalls[0].Arguments, c.Arguments)
				}
			}
		}
	}
	return true, ""
}

func simulateProbes(t *testing.T, reqs []traces.Request, cfg refengine.Config) (*refengine.SimResult, []bool) {
	t.Helper()
	res, err := refengine.Simulate(SimRequests(reqs, 1), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outputs == nil {
		t.Fatal("no outputs for graded requests")
	}
	ok := make([]bool, len(reqs))
	for i := range reqs {
		ok[i], _ = passes(&reqs[i], &res.Outputs[i])
	}
	return res, ok
}

// TestProbesAnsweredRight: with the error model off the engine answers every probe of every
// preset right, ends each answer where it ends (no ignore_eos padding), and the records carry
// the output text and tool calls.
func TestProbesAnsweredRight(t *testing.T) {
	for _, preset := range workloads.ProbePresets {
		t.Run(preset, func(t *testing.T) {
			reqs := probeTrace(t, preset, 48, []int{512, 2048})
			res, _ := simulateProbes(t, reqs, refengine.Config{Seed: 1})
			for i := range reqs {
				if ok, why := passes(&reqs[i], &res.Outputs[i]); !ok {
					t.Fatalf("%s (%s): %s\nprompt: %.400s", reqs[i].ID, reqs[i].Class, why, reqs[i].Messages[len(reqs[i].Messages)-1].Content)
				}
				rec := TimelineRecord(&res.Timelines[i], &reqs[i])
				if !rec.OK() || res.Timelines[i].OutputTokens >= reqs[i].OutputTokens {
					t.Fatalf("%s: %s %s, %d of %d tokens", reqs[i].ID, rec.Failure, rec.Error, res.Timelines[i].OutputTokens, reqs[i].OutputTokens)
				}
			}
		})
	}
}

// TestSimulatorOutputs: Produce fills OutputText and ToolCalls for graded requests only,
// every request with KeepOutput (the text the engine streams: tokenizer.Text of the output
// seed for words), and none otherwise.
func TestSimulatorOutputs(t *testing.T) {
	plain := []traces.Request{{ID: "p1", InputTokens: 30, OutputTokens: 12}, {ID: "p2", Arrival: time.Millisecond, InputTokens: 20, OutputTokens: 5}}
	graded := probeTrace(t, "tool-calling", 3, nil)
	for i := range graded {
		graded[i].ID = fmt.Sprint("g", i)
		graded[i].Arrival += 10 * time.Millisecond
	}
	reqs := append(plain, graded...)
	for _, keep := range []bool{false, true} {
		sim := &Simulator{Config: refengine.Config{Seed: 1}, RateScale: 1, KeepOutput: keep}
		got := map[string]*metrics.Record{}
		if _, err := sim.Produce(context.Background(), traces.FromSlice(reqs), func(r *metrics.Record) { got[r.ID] = r }); err != nil {
			t.Fatal(err)
		}
		for _, r := range plain {
			rec := got[r.ID]
			if keep != (rec.OutputText != "") || (keep && (tokenizer.Reference{}).Count(rec.OutputText) != rec.OutputTokens) {
				t.Errorf("keep=%v %s: output %q (%d tokens)", keep, r.ID, rec.OutputText, rec.OutputTokens)
			}
		}
		for _, r := range graded {
			if rec := got[r.ID]; len(rec.ToolCalls) != 1 || rec.ToolCalls[0].Name != r.Expect[0].Name || !rec.OK() {
				t.Errorf("keep=%v %s: %+v %s", keep, r.ID, rec.ToolCalls, rec.Failure)
			}
		}
	}
}
