package runner

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// Shard is one of Count parts of a run (run --shard I/N); Index is 0-based.
type Shard struct{ Index, Count int }

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// JobIndexEnv is the variable a Kubernetes Indexed Job sets to each pod's index.
const JobIndexEnv = "JOB_COMPLETION_INDEX"

// ParseShard reads "I/N" (0 <= I < N) or "auto/N", which takes I from $JOB_COMPLETION_INDEX
// through getenv.
func ParseShard(spec string, getenv func(string) string) (Shard, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(spec), "/")
	if !ok {
		return Shard{}, fmt.Errorf("--shard %q: want I/N (e.g. 0/4) or auto/N", spec)
	}
	n, err := strconv.Atoi(ns)
	if err != nil || n < 1 {
		return Shard{}, fmt.Errorf("--shard %q: N must be a whole number >= 1", spec)
	}
	if is == "auto" {
		v := ""
		if getenv != nil {
			v = getenv(JobIndexEnv)
		}
		if v == "" {
			return Shard{}, fmt.Errorf("--shard %q: $%s is not set (auto takes the index a Kubernetes Indexed Job gives each pod; elsewhere give I/N)", spec, JobIndexEnv)
		}
		is = v
	}
	i, err := strconv.Atoi(is)
	if err != nil || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("--shard %q: index %q must be a whole number in [0, %d)", spec, is, n)
	}
	return Shard{Index: i, Count: n}, nil
}

// ShardOf is the shard of a request among n: FNV-1a (64 bit) of its session name, or of its
// id outside sessions, through mix64, modulo n. It depends on nothing but the name, so every
// shard process (and merge) computes the same split, and a multi-turn session stays whole on
// one shard.
func ShardOf(q *traces.Request, n int) int {
	key := q.ID
	if q.Session != "" {
		key = "session\x00" + q.Session
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(mix64(h.Sum64()) % uint64(n))
}

// mix64 is SplitMix64's finalizer. FNV-1a's low bits depend mostly on the last bytes, so
// sequential ids (r1, r2, …) would alternate between shards in a pattern; the finalizer
// spreads every input bit over the result.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// TracePlan is what one pass over a whole trace tells its shards.
type TracePlan struct {
	// Fingerprint identifies the whole trace: FingerprintTrace's result (its Digest is
	// shard.json's trace_fingerprint, its components merge's run.trace_fingerprint).
	Fingerprint *metrics.TraceFingerprint
	// Whole is the whole trace's shape, which fixes every shard's schedule.
	Whole loadgen.TraceShape
	// PerShard counts each shard's requests (one pass; --repeat not applied).
	PerShard []int
}

// PlanShards reads src once: its fingerprint, its shape and each of n shards' size.
func PlanShards(src traces.Source, n int) (TracePlan, error) {
	p := TracePlan{PerShard: make([]int, n)}
	var fp fingerprinter
	visit := func(q *traces.Request) {
		fp.add(q)
		p.PerShard[ShardOf(q, n)]++
	}
	if err := src.Singles(func(_ int, q *traces.Request) error { visit(q); return nil }); err != nil {
		return p, err
	}
	src.Sessions(func(_ int, q *traces.Request) { visit(q) })
	first, last := src.Span()
	p.Whole = loadgen.TraceShape{First: first, Last: last, Len: src.Len()}
	p.Fingerprint = fp.result()
	return p, nil
}

// ShardSource is the part of src that is shard sh's: every request ShardOf assigns to it, in
// src's order. Positions are those of src. It reads src again on each pass, as src does.
func ShardSource(src traces.Source, sh Shard) (traces.Source, error) {
	s := &shardSource{src: src, sh: sh}
	b := traces.NewStatsBuilder(traces.DefaultBlockTokens)
	add := func(q *traces.Request) {
		if s.n == 0 || q.Arrival < s.first {
			s.first = q.Arrival
		}
		if s.n == 0 || q.Arrival > s.last {
			s.last = q.Arrival
		}
		s.n++
		b.Add(q)
	}
	if err := s.Singles(func(_ int, q *traces.Request) error { add(q); return nil }); err != nil {
		return nil, err
	}
	s.Sessions(func(_ int, q *traces.Request) { add(q) })
	s.stats = b.Stats()
	return s, nil
}

type shardSource struct {
	src         traces.Source
	sh          Shard
	n           int
	first, last time.Duration
	stats       traces.Stats
}

func (s *shardSource) mine(q *traces.Request) bool { return ShardOf(q, s.sh.Count) == s.sh.Index }

func (s *shardSource) Len() int                          { return s.n }
func (s *shardSource) Stats() traces.Stats               { return s.stats }
func (s *shardSource) Span() (first, last time.Duration) { return s.first, s.last }
func (s *shardSource) Sessions(fn func(int, *traces.Request)) {
	s.src.Sessions(func(pos int, q *traces.Request) {
		if s.mine(q) {
			fn(pos, q)
		}
	})
}

func (s *shardSource) Singles(fn func(int, *traces.Request) error) error {
	return s.src.Singles(func(pos int, q *traces.Request) error {
		if s.mine(q) {
			return fn(pos, q)
		}
		return nil
	})
}

func (s *shardSource) Requests() ([]traces.Request, error) {
	all, err := s.src.Requests()
	if err != nil {
		return nil, err
	}
	out := make([]traces.Request, 0, s.n)
	for i := range all {
		if s.mine(&all[i]) {
			out = append(out, all[i])
		}
	}
	return out, nil
}
