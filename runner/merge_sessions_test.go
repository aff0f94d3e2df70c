package runner

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// agenticShardTrace is n agentic sessions of five turns: a plan, two sub-agents after tool
// delays, a join after a think time, and a last call after the join.
func agenticShardTrace(n int) []traces.Request {
	ms := func(k int) time.Duration { return time.Duration(k) * time.Millisecond }
	var reqs []traces.Request
	for s := range n {
		name := fmt.Sprintf("agent-%d", s)
		at := ms(s * 700)
		add := func(turn int, after []int, think, tool time.Duration) {
			reqs = append(reqs, traces.Request{ID: fmt.Sprintf("%s.%d", name, turn), Session: name, Turn: turn, After: after,
				Think: think, ToolDelay: tool, Arrival: at + ms(turn*100), InputTokens: 100 * turn, OutputTokens: 10})
		}
		add(1, nil, 0, 0)
		add(2, []int{1}, 0, ms(40+s%7*10))
		add(3, []int{1}, 0, ms(90+s%5*20))
		add(4, []int{2, 3}, ms(300+s%3*100), 0)
		add(5, nil, 0, ms(60))
	}
	traces.SortByArrival(reqs)
	return reqs
}

// agenticRecords are the records of a replay of reqs as run makes them: each turn sent when
// its dependencies ended plus its think and tool time, with after, think and tool delay set,
// and a latency that varies with the request.
func agenticRecords(reqs []traces.Request) []metrics.Record {
	byTurn := map[string]map[int]int{}
	for i, q := range reqs {
		if byTurn[q.Session] == nil {
			byTurn[q.Session] = map[int]int{}
		}
		byTurn[q.Session][q.Turn] = i
	}
	recs := make([]metrics.Record, len(reqs))
	done := make([]bool, len(reqs))
	var build func(i int)
	build = func(i int) {
		if done[i] {
			return
		}
		q := &reqs[i]
		deps := q.After
		if deps == nil && q.Turn > 1 {
			deps = []int{q.Turn - 1}
		}
		intended := int64(q.Arrival)
		after := ""
		if len(deps) > 0 {
			latest := int64(-1)
			for _, t := range deps {
				d := byTurn[q.Session][t]
				build(d)
				if recs[d].End > latest {
					latest, after = recs[d].End, recs[d].ID
				}
			}
			intended = latest + int64(q.Think+q.ToolDelay)
		}
		shifted := *q
		shifted.Arrival = time.Duration(intended)
		r := synthRecord(&shifted, i)
		r.After, r.Think, r.ToolDelay = after, int64(q.Think), int64(q.ToolDelay)
		recs[i], done[i] = r, true
	}
	for i := range reqs {
		build(i)
	}
	return recs
}

// TestMergeRebuildsSessions: two shards of an agentic trace keep each session whole on one
// shard, and their merge rebuilds the summary's sessions block exactly: equal to one summary
// of all the records (each session's wall time and its model/tool/think split come from its
// own shard's records, which a shard's clock shift moves together), and adding up the shards'
// own sessions blocks.
func TestMergeRebuildsSessions(t *testing.T) {
	reqs := agenticShardTrace(60)
	recs := agenticRecords(reqs)
	owner := map[string]int{}
	for i := range reqs {
		sh := ShardOf(&reqs[i], 2)
		if o, ok := owner[reqs[i].Session]; ok && o != sh {
			t.Fatalf("session %s is split between shards %d and %d", reqs[i].Session, o, sh)
		}
		owner[reqs[i].Session] = sh
	}
	_, dirs, all := writeShardsOf(t, reqs, 2, []synthShard{
		{index: 0, keep: -1, finished: true, epoch: 0},
		{index: 1, keep: -1, finished: true, epoch: 3 * time.Second, offset: 250 * time.Millisecond},
	}, func(i int) metrics.Record { return recs[i] })
	res, err := Merge(MergeOptions{Dirs: dirs, OutDir: filepath.Join(t.TempDir(), "merged")})
	if err != nil {
		t.Fatal(err)
	}
	union, err := metrics.Summarize(metrics.SliceSource(all), metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, want := res.Summary.Sessions, union.Sessions
	if got == nil || want == nil || got.Count != 60 || got.Completed != 60 || got.Turns != 300 {
		t.Fatalf("merged sessions %+v", got)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merged sessions block\n%+v\nis not the union's\n%+v", got, want)
	}
	if want.ToolMs.Max == 0 || want.ThinkMs.Max == 0 || want.ToolFraction == 0 {
		t.Fatalf("the trace's tool and think time did not reach the sessions block: %+v", want)
	}
	count, turns := 0, 0
	for _, d := range dirs {
		s, err := ReadSummary(d)
		if err != nil {
			t.Fatal(err)
		}
		count += s.Sessions.Count
		turns += s.Sessions.Turns
		if s.Sessions.WallMs.Max > got.WallMs.Max {
			t.Errorf("%s: a shard's longest session %v ms is longer than the merge's %v ms", d, s.Sessions.WallMs.Max, got.WallMs.Max)
		}
	}
	if count != got.Count || turns != got.Turns {
		t.Errorf("shards hold %d sessions / %d turns, the merge %d / %d", count, turns, got.Count, got.Turns)
	}
}
