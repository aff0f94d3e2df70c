package reports

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// energyLine is the one-line form of the run's energy (metrics/energy.go): average power, J per
// request, output tokens per joule, the cost with a price, and the method; or, when the power
// is unknown, why.
func energyLine(e *metrics.Energy) string {
	if !e.Available {
		return "unknown: " + e.Note
	}
	span := " J in the window"
	if e.Method == metrics.EnergyByModel {
		span = " J over the makespan"
	}
	parts := []string{fmtRate(*e.AvgPowerW) + " W average over " + fmtInt(int64(e.GPUs)) + " GPU(s)",
		fmtRate(*e.Joules) + span}
	if e.JoulesPerRequest != nil {
		parts = append(parts, fmtRate(*e.JoulesPerRequest)+" J/request")
	}
	if e.OutputTokensPerJoule != nil {
		parts = append(parts, fmtRate(*e.OutputTokensPerJoule)+" output tok/J")
	}
	if e.Cost != nil {
		c := fmtMoney(*e.Cost, e.Currency)
		if e.CostPerRequest != nil {
			c += " (" + fmtMoney(*e.CostPerRequest, e.Currency) + "/request)"
		}
		parts = append(parts, c+" at "+fmtMoney(e.PricePerKWh, e.Currency)+"/kWh")
	}
	line := strings.Join(parts, " · ") + "; from " + e.Method
	if e.Note != "" {
		line += "; " + e.Note
	}
	return line
}

// energyTable is the HTML table of the run's energy.
func energyTable(e *metrics.Energy) *table {
	t := &table{Caption: "Energy (GPU power over the measured window)", Numeric: true}
	if !e.Available {
		t.add(txt("power"), txt("unknown"))
	} else {
		t.add(txt("average power"), txt(fmtRate(*e.AvgPowerW)+" W"))
		t.add(txt("energy in the window"), txt(fmtRate(*e.Joules)+" J"))
		if e.JoulesPerRequest != nil {
			t.add(txt("per successful request"), txt(fmtRate(*e.JoulesPerRequest)+" J"))
		}
		if e.OutputTokensPerJoule != nil {
			t.add(txt("output tokens per joule"), txt(fmtRate(*e.OutputTokensPerJoule)))
		}
		if e.Cost != nil {
			t.add(txt("energy cost"), txt(fmtMoney(*e.Cost, e.Currency)+" at "+fmtMoney(e.PricePerKWh, e.Currency)+"/kWh"))
		}
		if e.CostPerRequest != nil {
			t.add(txt("energy cost per request"), txt(fmtMoney(*e.CostPerRequest, e.Currency)))
		}
		t.add(txt("GPUs"), txt(fmtInt(int64(e.GPUs))))
		t.add(txt("method"), txt(e.Method))
		t.add(txt("window"), txt(fmt.Sprintf("%s to %s (%s covered)", fmtSecondsSigned(e.WindowStartS), fmtSecondsSigned(e.WindowEndS), fmtPct(e.CoveredFraction))))
	}
	if len(e.Sources) > 0 {
		t.add(txt("read from"), txt(strings.Join(e.Sources, ", ")))
	}
	if e.Note != "" {
		t.add(txt("note"), txt(e.Note))
	}
	return t
}

// energyCompareLine is the one-line form of a comparison's energy (metrics/energy_compare.go).
func energyCompareLine(c *metrics.EnergyComparison) string {
	side := func(s metrics.EnergySide) string {
		if s.Known == 0 {
			return "unknown"
		}
		out := []string{}
		if s.JoulesPerRequest != nil {
			out = append(out, fmtRate(*s.JoulesPerRequest)+energyCI(s.JoulesPerRequestCI)+" J/request")
		}
		if s.OutputTokensPerJoule != nil {
			out = append(out, fmtRate(*s.OutputTokensPerJoule)+energyCI(s.OutputTokensPerJouleCI)+" tok/J")
		}
		if s.AvgPowerW != nil {
			out = append(out, fmtRate(*s.AvgPowerW)+" W")
		}
		return strings.Join(out, ", ")
	}
	line := "base " + side(c.Base) + " → cand " + side(c.Cand)
	if c.JoulesPerRequestChange != nil {
		line += " (J/request " + fmtSignedPct(*c.JoulesPerRequestChange)
		if c.TokensPerJouleChange != nil {
			line += ", tok/J " + fmtSignedPct(*c.TokensPerJouleChange)
		}
		line += ")"
	}
	if v := c.JoulesPerRequestVerdict; v != nil {
		line += "; J/request " + energyVerdictText(v)
	}
	if v := c.TokensPerJouleVerdict; v != nil {
		line += ", tok/J " + energyVerdictText(v)
	}
	return line + "; " + c.Note
}

// energyVerdictText is a verdict with its interval: "better (−14.2 [−14.5, −13.9])".
func energyVerdictText(v *metrics.EnergyVerdict) string {
	return fmt.Sprintf("%s (%s [%s, %s])", v.Verdict, fmtSigned(v.Diff), fmtSigned(v.Lo), fmtSigned(v.Hi))
}

// fmtSigned is a signed figure with three significant digits.
func fmtSigned(x float64) string {
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// energyCI is " [lo, hi]" of an interval across runs, or "" without one.
func energyCI(ci *metrics.EnergyInterval) string {
	if ci == nil {
		return ""
	}
	return " [" + fmtRate(ci.Lo) + ", " + fmtRate(ci.Hi) + "]"
}

// energyCompareSection is the HTML section of a comparison's energy.
func energyCompareSection(c *metrics.EnergyComparison) section {
	t := &table{Numeric: true, Head: []string{"measure", "base", "cand", "change"}}
	opt := func(v *float64, ci *metrics.EnergyInterval) string {
		if v == nil {
			return "unknown"
		}
		return fmtRate(*v) + energyCI(ci)
	}
	chg := func(v *float64) string {
		if v == nil {
			return "–"
		}
		return fmtSignedPct(*v)
	}
	t.add(txt("J per request"), txt(opt(c.Base.JoulesPerRequest, c.Base.JoulesPerRequestCI)), txt(opt(c.Cand.JoulesPerRequest, c.Cand.JoulesPerRequestCI)), txt(chg(c.JoulesPerRequestChange)))
	t.add(txt("output tokens per joule"), txt(opt(c.Base.OutputTokensPerJoule, c.Base.OutputTokensPerJouleCI)), txt(opt(c.Cand.OutputTokensPerJoule, c.Cand.OutputTokensPerJouleCI)), txt(chg(c.TokensPerJouleChange)))
	verdict := func(v *metrics.EnergyVerdict) string {
		if v == nil {
			return ""
		}
		return " · " + energyVerdictText(v)
	}
	t.Rows[0][3] = txt(chg(c.JoulesPerRequestChange) + verdict(c.JoulesPerRequestVerdict))
	t.Rows[1][3] = txt(chg(c.TokensPerJouleChange) + verdict(c.TokensPerJouleVerdict))
	t.add(txt("average power (W)"), txt(opt(c.Base.AvgPowerW, nil)), txt(opt(c.Cand.AvgPowerW, nil)), txt("–"))
	t.add(txt("runs with known power"), txt(fmt.Sprintf("%d of %d", c.Base.Known, c.Base.Runs)), txt(fmt.Sprintf("%d of %d", c.Cand.Known, c.Cand.Runs)), txt(""))
	return section{ID: "energy", Title: "Energy", Intro: c.Note + " (docs/energy.md).", Blocks: []block{{Table: t}}}
}
