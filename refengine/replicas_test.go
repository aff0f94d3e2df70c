package refengine

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"testing"
	"time"
)

// sharedPrefixTrace returns n requests at rate req/s whose prompts start with one of groups
// shared prefixes of prefixIDs hash ids (HashIDTokens 512 each), drawn uniformly, followed by a
// unique 300-token tail; seed varies arrivals and groups.
func sharedPrefixTrace(n int, rate float64, groups, prefixIDs int, seed uint64) []SimRequest {
	reqs := make([]SimRequest, n)
	st := seed
	var t time.Duration
	for i := range reqs {
		t += time.Duration(-math.Log(1-uniform(&st)) / rate * float64(time.Second))
		g := int(uniform(&st) * float64(groups))
		ids := make([]int64, 0, prefixIDs+1)
		for j := 0; j < prefixIDs; j++ {
			ids = append(ids, int64(g*1000+j))
		}
		ids = append(ids, int64(1_000_000+i)) // the tail's own block id
		reqs[i] = SimRequest{ID: fmt.Sprintf("r%d", i), Arrival: t, PromptTokens: prefixIDs*512 + 300, HashIDs: ids, MaxTokens: 64}
	}
	return reqs
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	sort.Float64s(s)
	return s[len(s)/2]
}

// latencies returns every request's TTFT and TPOT in ms from the ground truth.
func latencies(t *testing.T, res *SimResult) (ttft, tpot []float64) {
	t.Helper()
	for i := range res.Timelines {
		tl := &res.Timelines[i]
		if !tl.Done || len(tl.Emissions) == 0 {
			t.Fatalf("request %s did not finish", tl.ID)
		}
		ttft = append(ttft, float64(tl.TTFT())/1e6)
		if tl.OutputTokens > 1 {
			tpot = append(tpot, float64(tl.Finish-tl.Emissions[0].At)/1e6/float64(tl.OutputTokens-1))
		}
	}
	return ttft, tpot
}

func TestRoundRobinSplitsExactly(t *testing.T) {
	reqs := synthTrace(1003, 20, 500, 50)
	// Shuffle the input order: routing follows arrival order, not input order.
	slices.Reverse(reqs)
	res, err := SimulateCluster(reqs, Config{}, ClusterOptions{Replicas: 4, Router: RouterRoundRobin})
	if err != nil {
		t.Fatal(err)
	}
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return reqs[order[a]].Arrival < reqs[order[b]].Arrival })
	for j, i := range order {
		if res.Replica[i] != j%4 {
			t.Fatalf("request %d (arrival #%d) went to replica %d, want %d", i, j, res.Replica[i], j%4)
		}
	}
	want := []int{251, 251, 251, 250}
	var prompt, out int64
	for k, rs := range res.Replicas {
		if rs.Requests != want[k] {
			t.Errorf("replica %d: %d requests, want %d", k, rs.Requests, want[k])
		}
		prompt += rs.PromptTokens
		out += rs.OutputTokens
	}
	if prompt != res.Stats.PromptTokens || out != res.Stats.GenerationTokens {
		t.Errorf("replica tokens %d/%d do not sum to the cluster's %d/%d", prompt, out, res.Stats.PromptTokens, res.Stats.GenerationTokens)
	}
	for i, tl := range res.Timelines {
		if !tl.Done || tl.OutputTokens != reqs[i].MaxTokens {
			t.Fatalf("request %d: done %v, %d of %d tokens", i, tl.Done, tl.OutputTokens, reqs[i].MaxTokens)
		}
	}
}

// TestOneReplicaIsSimulate: a one-replica cluster is the single engine, timeline for timeline,
// whatever the router.
func TestOneReplicaIsSimulate(t *testing.T) {
	reqs := sharedPrefixTrace(300, 10, 4, 2, 7)
	want, err := Simulate(reqs, Config{Seed: 3, Noise: Noise{Jitter: 0.05}})
	if err != nil {
		t.Fatal(err)
	}
	for _, router := range Routers {
		got, err := SimulateCluster(reqs, Config{Seed: 3, Noise: Noise{Jitter: 0.05}}, ClusterOptions{Replicas: 1, Router: router})
		if err != nil {
			t.Fatal(err)
		}
		for i := range want.Timelines {
			a, b := &want.Timelines[i], &got.Timelines[i]
			if a.Finish != b.Finish || a.CachedTokens != b.CachedTokens || !slices.Equal(a.Emissions, b.Emissions) {
				t.Fatalf("%s: request %d differs from Simulate: finish %v vs %v, cached %d vs %d", router, i, b.Finish, a.Finish, b.CachedTokens, a.CachedTokens)
			}
		}
		if got.Stats != want.Stats {
			t.Errorf("%s: stats %+v, Simulate's %+v", router, got.Stats, want.Stats)
		}
	}
}

// TestPrefixAwareBeatsRoundRobin: on a shared-prefix trace whose prefixes do not all fit in one
// replica's KV cache, routing by prefix keeps each group on few replicas, so the cluster finds
// more of its prompts cached and answers sooner. Checked over several seeded traces.
func TestPrefixAwareBeatsRoundRobin(t *testing.T) {
	// 32 groups of 2,048-token prefixes (128 blocks each) and 2,500 blocks a replica: a
	// replica holds about a third of all prefixes besides its running requests.
	cfg := Config{NumBlocks: 2500}
	for seed := uint64(1); seed <= 5; seed++ {
		reqs := sharedPrefixTrace(1500, 40, 32, 4, seed)
		hit := map[string]float64{}
		ttft := map[string]float64{}
		for _, router := range Routers {
			res, err := SimulateCluster(reqs, cfg, ClusterOptions{Replicas: 4, Router: router})
			if err != nil {
				t.Fatal(err)
			}
			hit[router] = float64(res.Stats.PrefixHits) / float64(res.Stats.PrefixQueries)
			tt, _ := latencies(t, &res.SimResult)
			ttft[router] = median(tt)
			for k, rs := range res.Replicas {
				if rs.Requests == 0 {
					t.Errorf("seed %d %s: replica %d got no request", seed, router, k)
				}
			}
		}
		t.Logf("seed %d: prefix hit rate %v, median TTFT ms %v", seed, hit, ttft)
		if hit[RouterPrefixAware] < hit[RouterRoundRobin]+0.1 {
			t.Errorf("seed %d: prefix-aware hit rate %.3f is not clearly above round-robin's %.3f", seed, hit[RouterPrefixAware], hit[RouterRoundRobin])
		}
		if ttft[RouterPrefixAware] >= ttft[RouterRoundRobin] {
			t.Errorf("seed %d: prefix-aware median TTFT %.1f ms is not below round-robin's %.1f ms", seed, ttft[RouterPrefixAware], ttft[RouterRoundRobin])
		}
	}
}

// TestReplicasScaleWithRate: N replicas at N times the rate see about the latency of one replica
// at the base rate (each replica gets a thinned share of the same traffic); ground truth on
// the virtual clock. Round-robin thinning makes each replica's arrivals more regular than the
// Poisson stream one replica sees (Erlang-N gaps), so queueing, and with it TTFT, is a little
// lower (about 8% here): TTFT is held within 15%, TPOT within 5%.
func TestReplicasScaleWithRate(t *testing.T) {
	const n = 4
	base := synthTrace(4000, 6, 2000, 300)
	one, err := Simulate(base, Config{})
	if err != nil {
		t.Fatal(err)
	}
	fast := slices.Clone(base)
	for i := range fast {
		fast[i].Arrival /= n
	}
	ttft1, tpot1 := latencies(t, one)
	for _, router := range []string{RouterRoundRobin, RouterLeastLoaded} {
		res, err := SimulateCluster(fast, Config{}, ClusterOptions{Replicas: n, Router: router})
		if err != nil {
			t.Fatal(err)
		}
		ttftN, tpotN := latencies(t, &res.SimResult)
		t.Logf("%s: TTFT median %.1f vs %.1f ms, TPOT median %.2f vs %.2f ms", router, median(ttftN), median(ttft1), median(tpotN), median(tpot1))
		for _, c := range []struct {
			name     string
			got, one float64
			tol      float64
		}{{"TTFT", median(ttftN), median(ttft1), 0.15}, {"TPOT", median(tpotN), median(tpot1), 0.05}} {
			if d := (c.got - c.one) / c.one; math.Abs(d) > c.tol {
				t.Errorf("%s: %d replicas at %dx the rate: median %s %.2f ms vs one replica's %.2f ms (%+.1f%%)", router, n, n, c.name, c.got, c.one, 100*d)
			}
		}
	}
}

func TestSimulateClusterRefusesBadOptions(t *testing.T) {
	reqs := synthTrace(10, 1, 100, 10)
	for _, o := range []ClusterOptions{{Replicas: -1}, {Replicas: 2, Router: "random"}} {
		if _, err := SimulateCluster(reqs, Config{}, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestOnFinishStopsEarly(t *testing.T) {
	reqs := synthTrace(500, 20, 500, 50)
	seen := 0
	res, err := SimulateCluster(reqs, Config{}, ClusterOptions{Replicas: 2, OnFinish: func(i int, tl *Timeline) bool {
		if !tl.Done || tl.ID != reqs[i].ID {
			t.Fatalf("OnFinish(%d) got %s, done %v", i, tl.ID, tl.Done)
		}
		tl.Emissions = nil
		seen++
		return seen < 100
	}})
	if err != nil {
		t.Fatal(err)
	}
	done := 0
	for _, tl := range res.Timelines {
		if tl.Done {
			done++
		}
	}
	if !res.Stopped || seen != 100 || done >= len(reqs) {
		t.Errorf("stopped %v after %d calls with %d of %d done", res.Stopped, seen, done, len(reqs))
	}
}
