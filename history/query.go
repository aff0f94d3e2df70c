package history

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/metrics"
)

// Filter selects runs.
type Filter struct {
	// Where keeps runs whose tags hold every key=value given ("branch" -> "main"). The key
	// "trace" matches the trace fingerprint (or its first characters), "model" the model.
	Where map[string]string
}

func (f Filter) keep(r *Run) bool {
	for k, v := range f.Where {
		switch k {
		case "trace", "trace_fingerprint":
			if r.TraceFingerprint != v && !(len(v) >= 4 && strings.HasPrefix(r.TraceFingerprint, v)) {
				return false
			}
		case "model":
			if r.Model != v {
				return false
			}
		default:
			if r.Tags[k] != v {
				return false
			}
		}
	}
	return true
}

// Runs loads every run that passes f, with facts, tags and metrics, in run order: by start
// time, then by the order they were added (runs that started in the same second keep the order
// of their adding).
func (s *Store) Runs(ctx context.Context, f Filter) ([]*Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, content_hash, results_dir, started_at, added_at, summary_schema,
		llmbench_version, revision, trace, trace_fingerprint, model, backend, mode, endpoint, machine, server_version, command
		FROM runs ORDER BY started_at, id`)
	if err != nil {
		return nil, fmt.Errorf("history: %s: read runs: %w", s.where, err)
	}
	defer rows.Close()
	byID := map[int64]*Run{}
	var all []*Run
	for rows.Next() {
		r := &Run{Facts: map[string]string{}, Tags: map[string]string{}, Metrics: map[string]float64{}, Intervals: map[string]metrics.RunInterval{}}
		var start, added string
		if err := rows.Scan(&r.ID, &r.Hash, &r.Dir, &start, &added, &r.SummarySchema, &r.Version, &r.Revision, &r.Trace,
			&r.TraceFingerprint, &r.Model, &r.Backend, &r.Mode, &r.Endpoint, &r.Machine, &r.ServerVersion, &r.Command); err != nil {
			return nil, fmt.Errorf("history: %s: read runs: %w", s.where, err)
		}
		r.Start, _ = time.Parse(timeLayout, start)
		r.Added, _ = time.Parse(timeLayout, added)
		byID[r.ID] = r
		all = append(all, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: %s: read runs: %w", s.where, err)
	}
	rows.Close()
	if err := s.eachKV(ctx, `SELECT run_id, key, value FROM run_tags`, func(id int64, k, v string) {
		if r := byID[id]; r != nil {
			r.Tags[k] = v
		}
	}); err != nil {
		return nil, err
	}
	var kept []*Run
	keptID := map[int64]bool{}
	for _, r := range all {
		if f.keep(r) {
			kept = append(kept, r)
			keptID[r.ID] = true
		}
	}
	if err := s.eachKV(ctx, `SELECT run_id, key, value FROM run_facts`, func(id int64, k, v string) {
		if keptID[id] {
			byID[id].Facts[k] = v
		}
	}); err != nil {
		return nil, err
	}
	mrows, err := s.db.QueryContext(ctx, `SELECT run_id, metric, value FROM run_metrics`)
	if err != nil {
		return nil, fmt.Errorf("history: %s: read metrics: %w", s.where, err)
	}
	defer mrows.Close()
	for mrows.Next() {
		var id int64
		var m string
		var v float64
		if err := mrows.Scan(&id, &m, &v); err != nil {
			return nil, fmt.Errorf("history: %s: read metrics: %w", s.where, err)
		}
		if keptID[id] {
			byID[id].Metrics[m] = v
		}
	}
	if err := mrows.Err(); err != nil {
		return nil, fmt.Errorf("history: %s: read metrics: %w", s.where, err)
	}
	mrows.Close()
	irows, err := s.db.QueryContext(ctx, `SELECT run_id, metric, lo, hi, se FROM run_intervals`)
	if err != nil {
		return nil, fmt.Errorf("history: %s: read intervals: %w", s.where, err)
	}
	defer irows.Close()
	for irows.Next() {
		var id int64
		var m string
		var iv metrics.RunInterval
		if err := irows.Scan(&id, &m, &iv.Lo, &iv.Hi, &iv.SE); err != nil {
			return nil, fmt.Errorf("history: %s: read intervals: %w", s.where, err)
		}
		if r := byID[id]; keptID[id] {
			if v, ok := r.Metrics[m]; ok {
				iv.Value = v
				r.Intervals[m] = iv
			}
		}
	}
	if err := irows.Err(); err != nil {
		return nil, fmt.Errorf("history: %s: read intervals: %w", s.where, err)
	}
	sort.SliceStable(kept, func(i, j int) bool {
		if !kept[i].Start.Equal(kept[j].Start) {
			return kept[i].Start.Before(kept[j].Start)
		}
		return kept[i].ID < kept[j].ID
	})
	return kept, nil
}

func (s *Store) eachKV(ctx context.Context, query string, fn func(int64, string, string)) error {
	rows, err := s.db.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("history: %s: %w", s.where, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var k, v string
		if err := rows.Scan(&id, &k, &v); err != nil {
			return fmt.Errorf("history: %s: %w", s.where, err)
		}
		fn(id, k, v)
	}
	return rows.Err()
}

// FindRun finds one run by its id ("12") or the first characters of its content hash (at
// least 6).
func (s *Store) FindRun(ctx context.Context, ref string) (*Run, error) {
	runs, err := s.Runs(ctx, Filter{})
	if err != nil {
		return nil, err
	}
	ref = strings.TrimSpace(ref)
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		for _, r := range runs {
			if r.ID == id {
				return r, nil
			}
		}
	}
	var found []*Run
	if len(ref) >= 6 {
		for _, r := range runs {
			if strings.HasPrefix(r.Hash, strings.ToLower(ref)) {
				found = append(found, r)
			}
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("history: no run %s in %s; give a run id or at least 6 characters of its hash (see history list)", quote(ref), s.where)
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("history: %s matches %d runs; give more of the hash", quote(ref), len(found))
}

// ConfigKey is the configuration a run belongs to: its trace fingerprint and its tags. Runs of
// one configuration form one series.
func ConfigKey(r *Run) string {
	parts := []string{"trace=" + r.TraceFingerprint}
	for _, k := range sortedKeys(r.Tags) {
		parts = append(parts, k+"="+r.Tags[k])
	}
	return strings.Join(parts, " ")
}
