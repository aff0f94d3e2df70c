package plan

import (
	"fmt"

	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
)

// Objectives: what "best" means among the deployments that meet the target (issue 39).
const (
	// ObjectiveCost chooses the cheapest (the default).
	ObjectiveCost = "cost"
	// ObjectiveTokensPerJoule chooses the one with the most output tokens per joule of GPU
	// energy, from the reference engine's power model (refengine/power.go).
	ObjectiveTokensPerJoule = "tokens-per-joule"
)

// Objectives lists the objectives, for help texts.
var Objectives = []string{ObjectiveCost, ObjectiveTokensPerJoule}

// checkObjective checks o.Objective and, for tokens per joule, that every GPU searched has
// power figures.
func (o *Options) checkObjective(shapes []shape) error {
	switch o.Objective {
	case "", ObjectiveCost:
		return nil
	case ObjectiveTokensPerJoule:
	default:
		return fmt.Errorf("plan: objective %q: want %s or %s", o.Objective, ObjectiveCost, ObjectiveTokensPerJoule)
	}
	reg := o.Base.Profiles
	if reg == nil {
		reg = perf.NewRegistry()
	}
	for _, sh := range shapes {
		g, err := reg.GPU(sh.gpu)
		if err != nil {
			return err
		}
		if _, ok := perf.PowerOf(g); !ok {
			return fmt.Errorf("plan: objective %s: GPU %s has no power figures (idle and board power); search GPUs with built-in figures", ObjectiveTokensPerJoule, sh.gpu)
		}
	}
	return nil
}

// setEnergy records a finished simulation's modelled energy on c.
func (c *Candidate) setEnergy(st refengine.SimStats) {
	if !st.EnergyKnown || !(st.EnergyJ > 0) || st.Makespan <= 0 {
		return
	}
	c.EnergyJ = st.EnergyJ
	c.AvgPowerW = st.EnergyJ / st.Makespan.Seconds()
	c.TokensPerJoule = float64(st.GenerationTokens) / st.EnergyJ
}

// lessFor is the ranking of objective: less (cheapest first), or the most output tokens per
// joule first (those without a figure last), then as less.
func lessFor(objective string) func(a, b *Candidate) bool {
	if objective != ObjectiveTokensPerJoule {
		return less
	}
	return func(a, b *Candidate) bool {
		if (a.Replicas == 0) != (b.Replicas == 0) {
			return b.Replicas == 0
		}
		if a.TokensPerJoule != b.TokensPerJoule {
			return a.TokensPerJoule > b.TokensPerJoule
		}
		return less(a, b)
	}
}

// energyHeadline is the headline of a tokens-per-joule search with a choice.
func energyHeadline(r *Result) string {
	b := r.Best
	return fmt.Sprintf("most output tokens per joule with goodput ≥ %s: %s at %.3g tokens/J (%.0f W average, modelled), %s %s per hour, goodput %s",
		pct(r.Target), b.Name(), b.TokensPerJoule, b.AvgPowerW, money(b.PricePerHour), r.Currency, pct(b.Goodput))
}
