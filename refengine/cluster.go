package refengine

import (
	"time"
)

// cluster runs one scheduler pool, or two in disaggregated mode: a prefill pool that computes
// each prompt and its first token, then hands the request's KV cache over (after a transfer
// time) to a decode pool that generates the rest. Pools step independently on the same
// simulated timeline; the caller moves time forward to nextEvent and calls advance.
type cluster struct {
	pools     []*pool
	transfers []transfer
	transfer  func(tokens int) time.Duration
	now       time.Duration
	noise     *noiser // nil: step times are exactly as priced
	// noiseBase numbers this cluster's pools in the noise draws (a replica's pools get their
	// own; 0 for a single engine).
	noiseBase int
}

type pool struct {
	c    *core
	busy bool          // a step is in progress
	end  time.Duration // when it ends
	dur  time.Duration // its priced duration
}

type transfer struct {
	s     *seq
	ready time.Duration
}

func (r *resolved) newCluster(obs observer, keepDone bool) *cluster {
	cl := &cluster{}
	n := 1
	if r.Disaggregated {
		n = 2
		bw := r.KVTransferBW
		roof := r.roof
		cl.transfer = func(tokens int) time.Duration { return roof.KVTransferTime(tokens, bw) }
	}
	for i := 0; i < n; i++ {
		c := r.newCore()
		c.obs = obs
		c.keepDone = keepDone
		if n == 2 && i == 0 {
			c.handoff = true
			c.specK = 0
		}
		cl.pools = append(cl.pools, &pool{c: c})
	}
	return cl
}

func (cl *cluster) submit(s *seq) { cl.pools[0].c.submit(s) }

// advance completes the steps that ended by cl.now and starts the decode phase of requests
// whose KV transfer is done.
func (cl *cluster) advance() {
	for _, p := range cl.pools {
		if p.busy && p.end <= cl.now {
			p.busy = false
			p.c.complete(cl.now, p.dur)
		}
	}
	if len(cl.pools) == 1 {
		return
	}
	pre, dec := cl.pools[0].c, cl.pools[1].c
	for _, s := range pre.handoffs {
		cl.transfers = append(cl.transfers, transfer{s: s, ready: cl.now + cl.transfer(s.numTokens-1)})
		s.tl.KVTransfer = cl.transfers[len(cl.transfers)-1].ready - cl.now
	}
	clear(pre.handoffs)
	pre.handoffs = pre.handoffs[:0]
	j := 0
	for _, t := range cl.transfers {
		if t.ready > cl.now || t.s.aborted {
			if !t.s.aborted {
				cl.transfers[j] = t
				j++
			} else {
				pre.freeBlocks(t.s)
				pre.abortSeq(t.s)
			}
			continue
		}
		pre.freeBlocks(t.s)
		dec.submitHandoff(t.s)
	}
	clear(cl.transfers[j:])
	cl.transfers = cl.transfers[:j]
}

// planIdle starts a step on every idle pool that has work.
func (cl *cluster) planIdle() {
	for i, p := range cl.pools {
		if p.busy {
			continue
		}
		p.c.now = max(p.c.now, cl.now)
		if d, ok := p.c.plan(); ok {
			d = cl.noise.step(cl.noiseBase+i, p.c.stats.Steps, cl.now, d)
			p.busy, p.dur, p.end = true, d, cl.now+d
		}
	}
}

// nextEvent is the earliest step end or transfer completion; ok is false when none is pending.
func (cl *cluster) nextEvent() (t time.Duration, ok bool) {
	for _, p := range cl.pools {
		if p.busy && (!ok || p.end < t) {
			t, ok = p.end, true
		}
	}
	for _, tr := range cl.transfers {
		if !ok || tr.ready < t {
			t, ok = tr.ready, true
		}
	}
	return t, ok
}

// busy reports whether any pool is stepping or any KV transfer is in flight.
func (cl *cluster) busy() bool {
	for _, p := range cl.pools {
		if p.busy {
			return true
		}
	}
	return len(cl.transfers) > 0
}

// anyIdle reports whether some pool is not stepping (so a new arrival could start at once).
func (cl *cluster) anyIdle() bool {
	for _, p := range cl.pools {
		if !p.busy {
			return true
		}
	}
	return false
}

func (cl *cluster) abort(s *seq) {
	for _, p := range cl.pools {
		if s.pool == p.c {
			p.c.abort(s)
			return
		}
	}
	s.aborted = true // in transfer: dropped when the transfer completes
}

func (cl *cluster) waiting() int {
	n := 0
	for _, p := range cl.pools {
		n += p.c.waiting.len()
	}
	return n + len(cl.transfers)
}

func (cl *cluster) running() int {
	n := 0
	for _, p := range cl.pools {
		n += len(p.c.running)
	}
	return n
}

// pending reports whether any request is still queued or running.
func (cl *cluster) pending() bool { return cl.running() > 0 || cl.waiting() > 0 }

// drainDone calls f for every request finished since the last call.
func (cl *cluster) drainDone(f func(*seq)) {
	for _, p := range cl.pools {
		for _, s := range p.c.done {
			f(s)
		}
		clear(p.c.done)
		p.c.done = p.c.done[:0]
	}
}

// stats sums the pools' counters (maxima are the largest of any pool).
func (cl *cluster) stats() coreStats {
	var st coreStats
	for _, p := range cl.pools {
		s := p.c.stats
		s.PrefixEvictions = p.c.pool.evictions
		st.add(s)
	}
	return st
}
