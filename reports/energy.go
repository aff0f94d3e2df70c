package reports

import (
	"fmt"
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
