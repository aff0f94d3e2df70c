package reports

import (
	"fmt"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// prefixPrimingLine is the one-line form of the summary's prefix_priming block
// (metrics/prefixpriming.go): the flush, the groups primed and, with a requested hit rate,
// the rates it was checked against.
func prefixPrimingLine(p *metrics.PrefixPriming) string {
	var parts []string
	if p.Flushed != "" {
		parts = append(parts, "cache flushed by "+p.Flushed)
	} else {
		parts = append(parts, "cache not flushed")
	}
	primed := fmt.Sprintf("%s prefix group(s) primed (%s prompt tokens)", fmtInt(int64(p.Groups)), fmtInt(p.Tokens))
	if p.Failed > 0 {
		primed += fmt.Sprintf(", %d failed", p.Failed)
	}
	parts = append(parts, primed)
	if p.RequestedHitRate != nil {
		rates := []string{"requested " + fmtPct(*p.RequestedHitRate)}
		if p.AchievedHitRate != nil {
			rates = append(rates, "achieved "+fmtPct(*p.AchievedHitRate))
		}
		if p.ServerHitRate != nil {
			rates = append(rates, "server "+fmtPct(*p.ServerHitRate))
		}
		verdict := fmt.Sprintf("within %.1f pp", 100*p.Tolerance)
		if !p.Verified {
			verdict = "NOT within " + strings.TrimPrefix(verdict, "within ") + " (see warnings)"
		}
		parts = append(parts, strings.Join(rates, ", ")+": "+verdict)
	}
	return strings.Join(parts, " · ")
}

// prefixPrimingTable is the HTML table of the prefix priming.
func prefixPrimingTable(p *metrics.PrefixPriming) *table {
	t := &table{Caption: "Prefix priming (before the measured window)", Numeric: true}
	flushed := p.Flushed
	if flushed == "" {
		flushed = "not flushed: " + p.FlushNote
	}
	t.add(txt("cache flush"), txt(flushed))
	t.add(txt("groups primed"), txt(fmtInt(int64(p.Groups))))
	t.add(txt("priming prompt tokens"), txt(fmtInt(p.Tokens)))
	if p.Failed > 0 {
		t.add(txt("priming requests failed"), txt(fmtInt(int64(p.Failed))))
	}
	for _, r := range []struct {
		name string
		v    *float64
	}{{"requested hit rate", p.RequestedHitRate}, {"achieved (records)", p.AchievedHitRate}, {"achieved (server counters)", p.ServerHitRate}, {"designed once primed", p.DesignedHitRate}} {
		if r.v != nil {
			t.add(txt(r.name), txt(fmtPct(*r.v)))
		}
	}
	if p.RequestedHitRate != nil {
		verdict := "yes"
		if !p.Verified {
			verdict = "no (see warnings)"
		}
		t.add(txt(fmt.Sprintf("within %.1f pp", 100*p.Tolerance)), txt(verdict))
	}
	return t
}
