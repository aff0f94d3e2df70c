package reports

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// serverPrefixCacheLine is the one-line form of the server's prefix-cache hit rate over the
// run (metrics/prefixcache_server.go): the rate, the counters' increase and the scrape times,
// or, without counters, why there is no figure.
func serverPrefixCacheLine(p *metrics.ServerPrefixCache) string {
	if !p.Available {
		return "server: no per-run figure: " + p.Note
	}
	counters := "counters"
	if p.Backend != "" {
		counters = p.Backend + " counters"
	}
	line := fmt.Sprintf("server %s (%s of %s prompt tokens cached; %s scraped at %s and %s)",
		fmtPct(p.HitRate), fmtInt(int64(p.Hits)), fmtInt(int64(p.Queries)), counters,
		fmtSecondsSigned(p.WindowStartS), fmtSecondsSigned(p.WindowEndS))
	if p.Resets > 0 {
		line += fmt.Sprintf(" · %d counter reset(s): server restarted?", p.Resets)
	}
	if len(p.Endpoints) > 0 {
		line += " · per server: " + strings.Join(endpointRates(p.Endpoints), ", ")
	}
	return line
}

// endpointRates is each server's share of a combined figure: its endpoint and hit rate, or
// "no figure".
func endpointRates(eps []metrics.ServerPrefixCacheEndpoint) []string {
	out := make([]string, len(eps))
	for i, e := range eps {
		rate := "no figure"
		if e.Available {
			rate = fmt.Sprintf("%s (%s of %s)", fmtPct(e.HitRate), fmtInt(int64(e.Hits)), fmtInt(int64(e.Queries)))
		}
		out[i] = e.Endpoint + " " + rate
	}
	return out
}

// fmtSecondsSigned formats a time in seconds from the run epoch, which may be negative.
func fmtSecondsSigned(v float64) string {
	return strconv.FormatFloat(v, 'f', 1, 64) + " s"
}

// serverPrefixCacheTable is the HTML table of the server's prefix-cache hit rate.
func serverPrefixCacheTable(p *metrics.ServerPrefixCache) *table {
	t := &table{Caption: "Server prefix cache (its counters over the run)", Numeric: true}
	if p.Backend != "" {
		t.add(txt("server"), txt(p.Backend))
	}
	if p.Available {
		t.add(txt("hit rate"), txt(fmtPct(p.HitRate)))
		t.add(txt("cached tokens"), txt(fmtInt(int64(p.Hits))))
		t.add(txt("prompt tokens looked up"), txt(fmtInt(int64(p.Queries))))
		t.add(txt("scraped at"), txt(fmtSecondsSigned(p.WindowStartS)+" and "+fmtSecondsSigned(p.WindowEndS)))
		t.add(txt("counters"), txt(p.Source))
		if p.Resets > 0 {
			t.add(txt("counter resets"), txt(fmtInt(int64(p.Resets))))
		}
	}
	for i, e := range endpointRates(p.Endpoints) {
		t.add(txt(fmt.Sprintf("server %d", i+1)), txt(e))
	}
	if p.Note != "" {
		t.add(txt("note"), txt(p.Note))
	}
	return t
}
