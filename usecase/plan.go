package usecase

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/plan"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/runner/engineadapter"
	"github.com/llmbench/llmbench/traces"
)

// PlanOptions are `llmbench plan`'s options: the deployments to search (GPUs, weight dtypes,
// TP, replicas), the SLO and goodput target, the GPUs' prices, and the engine options every
// candidate shares.
type PlanOptions struct {
	Trace     TraceOptions
	Engine    EngineOptions
	SLO       string
	ClassSLO  []string
	Target    float64
	GPUs      []string
	Dtypes    []string
	TPs       []int
	Replicas  string
	Router    string
	Prices    []string
	Currency  string
	RateScale float64
	Workers   int
	Format    string
	// HTML is the file the HTML report goes to ("" for none).
	HTML      string
	EChartsJS string
	// Objective is what "best" means among the deployments meeting the target (issue 39:
	// plan.ObjectiveCost, the default, or tokens-per-joule).
	Objective string
}

// PlanObjectives and PlanObjectiveCost name plan's objectives, for the flag's help.
var (
	PlanObjectives    = plan.Objectives
	PlanObjectiveCost = plan.ObjectiveCost
)

// Plan searches for the cheapest deployment that meets the target, prints it (text or JSON)
// and writes the HTML report; exit 1 when no deployment searched meets the target.
func Plan(env *Env, o *PlanOptions) (int, error) {
	opts, err := o.options()
	if err != nil {
		return ExitBadInput, err
	}
	res, err := plan.Run(opts)
	if err != nil {
		return ExitBadInput, err
	}
	if o.Format == "json" {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return ExitBadInput, err
		}
	} else if err := res.WriteTerminal(env.Stdout, o.Trace.Path); err != nil {
		return ExitBadInput, err
	}
	if err := o.writeHTML(env, res); err != nil {
		return ExitBadInput, err
	}
	if res.Best == nil {
		return ExitRegression, nil
	}
	return ExitOK, nil
}

// options checks the options, reads the trace and builds the search's options.
func (o *PlanOptions) options() (plan.Options, error) {
	if o.Format != "text" && o.Format != "json" {
		return plan.Options{}, fmt.Errorf("--format %q: want text or json", clip(o.Format, 20))
	}
	if o.SLO == "" && len(o.ClassSLO) == 0 {
		return plan.Options{}, fmt.Errorf("plan needs --slo (goodput is the share of requests that meet it)")
	}
	if !(o.RateScale > 0) {
		return plan.Options{}, fmt.Errorf("--rate-scale must be > 0")
	}
	if !slices.Contains(refengine.Routers, o.Router) {
		return plan.Options{}, fmt.Errorf("--router %q: want one of %s", clip(o.Router, 40), strings.Join(refengine.Routers, ", "))
	}
	var mo metrics.Options
	if err := ParseSLOFlags(&mo, o.SLO, o.ClassSLO); err != nil {
		return plan.Options{}, err
	}
	lo, hi, err := parseReplicaRange(o.Replicas)
	if err != nil {
		return plan.Options{}, err
	}
	cfg, err := o.Engine.Config()
	if err != nil {
		return plan.Options{}, err
	}
	reg := cfg.Profiles
	if reg == nil {
		reg = perf.NewRegistry()
	}
	prices, err := parsePrices(o.Prices, reg)
	if err != nil {
		return plan.Options{}, err
	}
	reqs, err := o.Trace.Read()
	if err != nil {
		return plan.Options{}, err
	}
	if n := countCancelled(reqs); n > 0 {
		// Cancellations (issue 38): as simulate, plan's timelines have no client to go away
		// and would count the cancelled requests as completed.
		return plan.Options{}, fmt.Errorf("plan: %d requests of the trace carry cancel_after_ms, which the simulation does not model; remove the field to plan for the traffic as if no client went away (docs/cancellations.md)", n)
	}
	return plan.Options{
		Requests: engineadapter.SimRequests(reqs, o.RateScale),
		Record:   func(i int, tl *refengine.Timeline, rec *metrics.Record) { engineadapter.FillRecord(rec, tl, &reqs[i]) },
		Base:     cfg, GPUs: o.GPUs, Dtypes: o.Dtypes, TPs: o.TPs, MinReplicas: lo, MaxReplicas: hi,
		Router: o.Router, SLO: mo, Target: o.Target, Prices: prices, Currency: o.Currency, Workers: o.Workers,
		Objective: o.Objective,
	}, nil
}

// writeHTML writes the plan's HTML report to o.HTML when one is asked for.
func (o *PlanOptions) writeHTML(env *Env, res *plan.Result) error {
	if o.HTML == "" {
		return nil
	}
	f, err := os.Create(o.HTML)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := res.WriteHTML(f, o.Trace.Path, "llmbench "+env.Version, reports.HTMLOptions{EChartsJS: o.EChartsJS, Getenv: env.Getenv}); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "plan report: %s\n", o.HTML)
	return nil
}

// parseReplicaRange reads "auto", "N" or "MIN..MAX" (max 0: auto).
func parseReplicaRange(s string) (lo, hi int, err error) {
	s = strings.TrimSpace(s)
	if s == "auto" {
		return 1, 0, nil
	}
	a, b, isRange := strings.Cut(s, "..")
	if !isRange {
		b = a
	}
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil || lo < 1 || hi < lo {
		return 0, 0, fmt.Errorf("--replicas %q: want MIN..MAX (1 <= MIN <= MAX, e.g. 1..8), N, or auto", clip(s, 40))
	}
	return lo, hi, nil
}

// parsePrices reads GPU=PRICE items ("$" before the price is accepted), GPU names resolved to
// their profiles.
func parsePrices(items []string, reg *perf.Registry) (map[string]float64, error) {
	out := map[string]float64{}
	for _, item := range items {
		for _, part := range strings.Split(item, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			name, v, ok := strings.Cut(part, "=")
			price, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(v), "$"), 64)
			if !ok || err != nil || !(price > 0) || price > 1e6 {
				return nil, fmt.Errorf("--price-gpu-hour %q: want GPU=PRICE with a positive price, e.g. h100=2.49", clip(part, 40))
			}
			g, err := reg.GPU(strings.TrimSpace(name))
			if err != nil {
				return nil, fmt.Errorf("--price-gpu-hour %s: %w", clip(name, 40), err)
			}
			out[g.Name] = price
		}
	}
	return out, nil
}

// countCancelled counts the requests that carry cancel_after_ms.
func countCancelled(reqs []traces.Request) int {
	n := 0
	for i := range reqs {
		if reqs[i].CancelAfter > 0 {
			n++
		}
	}
	return n
}
