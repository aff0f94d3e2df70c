package metrics

import (
	"strings"
	"testing"
)

func TestServerPrefixCacheDeltaUsesTheScrapesBracketingTheWindow(t *testing.T) {
	pts := []PrefixCounterPoint{
		{T: -5, Hits: 100, Queries: 1000},   // long before: not the start
		{T: -0.5, Hits: 150, Queries: 1100}, // last at or before the start
		{T: 4, Hits: 400, Queries: 1500},
		{T: 10.2, Hits: 550, Queries: 1800}, // first at or after the end
		{T: 11, Hits: 900, Queries: 2500},   // after: not counted
	}
	got := ServerPrefixCacheDelta("vllm", "h / q", pts, 0, 10)
	if !got.Available || got.Hits != 400 || got.Queries != 700 || got.WindowStartS != -0.5 || got.WindowEndS != 10.2 || got.Resets != 0 {
		t.Fatalf("%+v", got)
	}
	if want := 400.0 / 700; got.HitRate != want {
		t.Fatalf("hit rate %v, want %v", got.HitRate, want)
	}
	if strings.Contains(got.Note, "no scrape") {
		t.Fatalf("note %q claims a missing scrape", got.Note)
	}
}

func TestServerPrefixCacheDeltaCountsAResetFromZero(t *testing.T) {
	pts := []PrefixCounterPoint{
		{T: 0, Hits: 500, Queries: 1000},
		{T: 1, Hits: 600, Queries: 1200},
		{T: 2, Hits: 30, Queries: 90}, // restarted: 30 and 90 since
		{T: 3, Hits: 80, Queries: 190},
	}
	got := ServerPrefixCacheDelta("sglang", "", pts, 0, 3)
	if !got.Available || got.Resets != 1 || got.Hits != 100+80 || got.Queries != 200+190 {
		t.Fatalf("%+v", got)
	}
	if got.Hits < 0 || got.Queries < 0 || !strings.Contains(got.Note, "went back 1 time") {
		t.Fatalf("%+v", got)
	}
	// Only the queries counter going back is a reset too.
	got = ServerPrefixCacheDelta("sglang", "", []PrefixCounterPoint{{0, 5, 100}, {1, 6, 10}}, 0, 1)
	if got.Resets != 1 || got.Hits != 6 || got.Queries != 10 {
		t.Fatalf("%+v", got)
	}
}

func TestServerPrefixCacheDeltaSaysWhenTheScrapesMissTheWindow(t *testing.T) {
	pts := []PrefixCounterPoint{{T: 1, Hits: 0, Queries: 0}, {T: 5, Hits: 10, Queries: 40}}
	got := ServerPrefixCacheDelta("vllm", "", pts, 0, 9)
	if !got.Available || got.Hits != 10 || got.HitRate != 0.25 {
		t.Fatalf("%+v", got)
	}
	for _, want := range []string{"no scrape before the window's start", "no scrape after the window's end"} {
		if !strings.Contains(got.Note, want) {
			t.Errorf("note %q lacks %q", got.Note, want)
		}
	}
	one := ServerPrefixCacheDelta("vllm", "", pts[:1], 0, 9)
	if one.Available || one.HitRate != 0 || !strings.Contains(one.Note, "1 scrape") {
		t.Fatalf("%+v", one)
	}
	// Every scrape inside the window: the last at or before its start is the first, the first
	// at or after its end the last, and they are different scrapes.
	inside := ServerPrefixCacheDelta("vllm", "", []PrefixCounterPoint{{T: 2}, {T: 3, Hits: 1, Queries: 2}}, 0, 9)
	if !inside.Available || inside.Hits != 1 {
		t.Fatalf("%+v", inside)
	}
	// No queries: a rate of 0, never NaN (summary.json must encode).
	idle := ServerPrefixCacheDelta("vllm", "", []PrefixCounterPoint{{T: -1}, {T: 10}}, 0, 9)
	if !idle.Available || idle.HitRate != 0 || idle.Queries != 0 {
		t.Fatalf("%+v", idle)
	}
}

func TestServerPrefixCacheDeltaOutOfRange(t *testing.T) {
	pts := []PrefixCounterPoint{{T: 0, Hits: 1e308, Queries: 1e308}, {T: 1, Hits: 0, Queries: 0}, {T: 2, Hits: 1.7e308, Queries: 1.7e308}, {T: 3, Hits: 0, Queries: 0}, {T: 4, Hits: 1.7e308, Queries: 1.7e308}}
	got := ServerPrefixCacheDelta("vllm", "", pts, 0, 4)
	if got.Available || got.HitRate != 0 || got.Hits != 0 || !strings.Contains(got.Note, "out of range") {
		t.Fatalf("%+v", got)
	}
}
