package refengine

import (
	"fmt"
	"sort"
	"time"
)

// clusterRun is one SimulateCluster run: the requests in arrival order, the router over the
// replicas and the virtual clock. SimulateCluster plans it (newClusterRun), executes it (loop)
// and reports it (report).
type clusterRun struct {
	reqs     []SimRequest
	seqs     []seq
	r        *resolved
	res      *ClusterResult
	rt       *routing
	onFinish func(i int, tl *Timeline) bool
	track    bool         // finished requests are drained each round (OnFinish or prefix-aware)
	index    map[*seq]int // a tracked seq's index in reqs
	order    []int        // request indices by arrival (stable)
	next     int          // the next request of order to arrive
	now      time.Duration
	stop     bool // OnFinish returned false
}

// newClusterRun builds n replicas of r and the router state, and sorts the requests by
// arrival; the clock starts at the first arrival.
func newClusterRun(reqs []SimRequest, seqs []seq, r *resolved, res *ClusterResult, onFinish func(int, *Timeline) bool, n int) *clusterRun {
	prefixAware := res.Router == RouterPrefixAware && !r.DisablePrefixCaching
	cr := &clusterRun{reqs: reqs, seqs: seqs, r: r, res: res, onFinish: onFinish, track: onFinish != nil || prefixAware}
	noise := newNoiser(r.Noise, r.Seed)
	cr.rt = &routing{kind: res.Router, cls: make([]*cluster, n), blockSize: r.BlockSize}
	for k := range cr.rt.cls {
		cl := r.newCluster(nil, cr.track)
		cl.noise = noise
		cl.noiseBase = k * len(cl.pools)
		cr.rt.cls[k] = cl
	}
	if prefixAware {
		cr.rt.inflight = make([]map[uint64]int32, n)
		for k := range cr.rt.inflight {
			cr.rt.inflight[k] = map[uint64]int32{}
		}
		cr.rt.held = make([][]uint64, len(reqs))
	}
	if cr.track {
		cr.index = make(map[*seq]int, len(seqs))
		for i := range seqs {
			cr.index[&seqs[i]] = i
		}
	}
	res.Replica = make([]int, len(reqs))
	res.Replicas = make([]ReplicaStats, n)
	cr.order = make([]int, len(reqs))
	for i := range cr.order {
		cr.order[i] = i
		res.Replica[i] = -1
	}
	sort.SliceStable(cr.order, func(a, b int) bool { return reqs[cr.order[a]].Arrival < reqs[cr.order[b]].Arrival })
	if len(reqs) > 0 {
		cr.now = reqs[cr.order[0]].Arrival
	}
	return cr
}

// loop advances every replica to the clock, drains finished requests, routes the arrivals
// and moves the clock to the next event, until nothing is left, OnFinish stops it or the
// replicas stall.
func (cr *clusterRun) loop() error {
	for {
		for _, cl := range cr.rt.cls {
			cl.now = cr.now
			cl.advance()
		}
		if cr.track {
			for _, cl := range cr.rt.cls {
				cl.drainDone(cr.done)
			}
			if cr.stop {
				cr.res.Stopped = true
				return nil
			}
		}
		cr.admitArrivals()
		t, ok := cr.nextEvent()
		if !ok {
			return cr.stalled()
		}
		cr.now = max(cr.now, t)
	}
}

// done releases a finished request's routed prefix blocks and reports it to OnFinish.
func (cr *clusterRun) done(s *seq) {
	i := cr.index[s]
	if cr.rt.held != nil {
		cr.rt.release(cr.res.Replica[i], cr.rt.held[i])
		cr.rt.held[i] = nil
	}
	if cr.onFinish != nil && !cr.stop && !cr.onFinish(i, s.tl) {
		cr.stop = true
	}
}

// admitArrivals routes every request that has arrived by now and submits it to its replica.
func (cr *clusterRun) admitArrivals() {
	res, rt := cr.res, cr.rt
	for cr.next < len(cr.order) && cr.reqs[cr.order[cr.next]].Arrival <= cr.now {
		i := cr.order[cr.next]
		s := &cr.seqs[i]
		emissionCap := s.target
		if cr.r.SpecK > 0 {
			emissionCap = emissionCap/2 + 1
		}
		res.Timelines[i].Emissions = make([]Emission, 0, emissionCap)
		k := rt.route(s, cr.next)
		res.Replica[i] = k
		res.Replicas[k].Requests++
		if rt.held != nil && len(s.hashes) > 0 {
			rt.held[i] = s.hashes
			rt.hold(k, s.hashes)
		}
		rt.cls[k].submit(s)
		cr.next++
	}
}

// nextEvent is the earliest of the replicas' next events and the next arrival; false when
// there is none.
func (cr *clusterRun) nextEvent() (time.Duration, bool) {
	var t time.Duration
	ok := false
	for _, cl := range cr.rt.cls {
		cl.planIdle()
		if e, eok := cl.nextEvent(); eok && (!ok || e < t) {
			t, ok = e, true
		}
	}
	if cr.next < len(cr.order) && (!ok || cr.reqs[cr.order[cr.next]].Arrival < t) {
		t, ok = cr.reqs[cr.order[cr.next]].Arrival, true
	}
	return t, ok
}

// stalled is called when no event is left: nil when every request finished, ErrStalled when
// some are still running or waiting.
func (cr *clusterRun) stalled() error {
	running, waiting := 0, 0
	for _, cl := range cr.rt.cls {
		running += cl.running()
		waiting += cl.waiting()
	}
	if running+waiting > 0 {
		return fmt.Errorf("refengine: simulation stalled with %d running and %d waiting requests (KV cache of %d blocks too small?): %w",
			running, waiting, cr.r.numBlocks, ErrStalled)
	}
	return nil
}

// report fills the per-replica stats, the cluster's summed stats and the makespan.
func (cr *clusterRun) report() {
	res := cr.res
	var st coreStats
	for k, cl := range cr.rt.cls {
		s := cl.stats()
		res.Replicas[k].PromptTokens = s.PromptTokens
		res.Replicas[k].OutputTokens = s.GenerationTokens
		res.Replicas[k].PrefixQueries = s.PrefixQueries
		res.Replicas[k].PrefixHits = s.PrefixHits
		res.Replicas[k].Preemptions = s.Preemptions
		res.Replicas[k].Steps = s.Steps
		res.Replicas[k].BusyTime = s.BusyTime
		st.add(s)
	}
	res.Stats = SimStats{
		Steps: st.Steps, BusyTime: st.BusyTime, Preemptions: st.Preemptions, PreemptedReqs: st.PreemptedRequests,
		PrefixQueries: st.PrefixQueries, PrefixHits: st.PrefixHits, SpecPasses: st.SpecPasses,
		SpecDraftTokens: st.SpecDraftTokens, SpecAccepted: st.SpecAccepted, PromptTokens: st.PromptTokens,
		GenerationTokens: st.GenerationTokens, ComputedTokens: st.ComputedTokens, MaxRunning: st.MaxRunning,
		MaxBlocksUsed: st.MaxBlocksUsed, NumBlocks: cr.r.numBlocks, PrefixEvictions: st.PrefixEvictions,
		LoRALoads: st.LoRALoads, LoRAEvictions: st.LoRAEvictions, LoRALoadTime: st.LoRALoadTime,
	}
	if len(cr.reqs) > 0 {
		res.Stats.Makespan = cr.now - cr.reqs[cr.order[0]].Arrival
		st := &res.Stats
		st.EnergyJ, st.EnergyGPUs, st.EnergySource, st.EnergyKnown = simEnergy(cr.rt.cls, cr.r, cr.reqs[cr.order[0]].Arrival, cr.now)
	}
}
