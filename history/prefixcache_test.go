package history

import (
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestServerPrefixCacheInHistory: the server's hit rate is stored when its counters gave one,
// and left out (never a 0 that reads as a measurement) when they did not.
func TestServerPrefixCacheInHistory(t *testing.T) {
	s, err := ParseSummary(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := Scalars(s)[ServerPrefixCacheMetric]; ok {
		t.Fatal("stored without a server_prefix_cache block")
	}
	s.ServerPrefixCache = &metrics.ServerPrefixCache{Backend: "sglang", Note: "no counters"}
	if _, ok := Scalars(s)[ServerPrefixCacheMetric]; ok {
		t.Fatal("stored without counters")
	}
	s.ServerPrefixCache = &metrics.ServerPrefixCache{Available: true, Hits: 750, Queries: 1000, HitRate: 0.75}
	if v := Scalars(s)[ServerPrefixCacheMetric]; v != 0.75 {
		t.Fatalf("stored %v, want 0.75", v)
	}
	m, err := LookupMetric("server_prefix_cache.hit_rate")
	if err != nil || m.Unit != "fraction" || m.Better != metrics.BetterHigher {
		t.Fatalf("metric info %+v, %v", m, err)
	}
}
