package traces

import (
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"slices"
	"sort"
	"sync"
	"time"
)

// Source is a trace to replay. FromSlice wraps requests held in memory; OpenFile returns a
// trace file that is checked once and then read again on each pass of the replay, so that a
// replay of millions of requests holds only the requests in flight.
//
// A request's position is its 0-based index in the trace's order: the slice's order for
// FromSlice, the file's order for OpenFile. Replay breaks ties between equal arrivals by it.
type Source interface {
	// Len is the number of requests.
	Len() int
	// Stats describes the workload (DefaultBlockTokens tokens per hash_ids block).
	Stats() Stats
	// Span returns the earliest and the latest arrival.
	Span() (first, last time.Duration)
	// Sessions calls fn for every request of a multi-turn session (Session != ""), in trace
	// order, with its position. Sessions are held in memory: a later turn is needed when the
	// previous one ends. q stays valid and must not be modified.
	Sessions(fn func(pos int, q *Request))
	// Singles calls fn for every request outside sessions in arrival order (trace order among
	// equal arrivals), with its position. q stays valid and must not be modified. An error from
	// fn ends the walk and is returned, as is a failure to read the trace again.
	Singles(fn func(pos int, q *Request) error) error
	// Requests returns the whole trace in memory: the file as ReadFile reads it (sorted by
	// arrival), or FromSlice's slice itself, in its own order.
	Requests() ([]Request, error)
}

// FromSlice is the Source of requests in memory (in any order). The slice must not change
// while the Source is used.
func FromSlice(reqs []Request) Source { return &sliceSource{reqs: reqs} }

type sliceSource struct {
	reqs      []Request
	orderOnce sync.Once
	order     []int32 // indices in stable arrival order; nil when reqs is sorted
	statsOnce sync.Once
	stats     Stats
}

func (s *sliceSource) Len() int { return len(s.reqs) }

func (s *sliceSource) Stats() Stats {
	s.statsOnce.Do(func() { s.stats = ComputeStats(s.reqs) })
	return s.stats
}

func (s *sliceSource) Span() (first, last time.Duration) {
	for i := range s.reqs {
		a := s.reqs[i].Arrival
		if i == 0 || a < first {
			first = a
		}
		if a > last {
			last = a
		}
	}
	return first, last
}

func (s *sliceSource) Sessions(fn func(int, *Request)) {
	for i := range s.reqs {
		if s.reqs[i].Session != "" {
			fn(i, &s.reqs[i])
		}
	}
}

func (s *sliceSource) Singles(fn func(int, *Request) error) error {
	s.orderOnce.Do(func() {
		for i := 1; i < len(s.reqs); i++ {
			if s.reqs[i].Arrival < s.reqs[i-1].Arrival {
				s.order = make([]int32, len(s.reqs))
				for j := range s.order {
					s.order[j] = int32(j)
				}
				sort.SliceStable(s.order, func(a, b int) bool { return s.reqs[s.order[a]].Arrival < s.reqs[s.order[b]].Arrival })
				return
			}
		}
	})
	visit := func(i int) error {
		if s.reqs[i].Session != "" {
			return nil
		}
		return fn(i, &s.reqs[i])
	}
	if s.order == nil {
		for i := range s.reqs {
			if err := visit(i); err != nil {
				return err
			}
		}
		return nil
	}
	for _, i := range s.order {
		if err := visit(int(i)); err != nil {
			return err
		}
	}
	return nil
}

func (s *sliceSource) Requests() ([]Request, error) { return s.reqs, nil }

// Held reports whether src holds its whole trace in memory: FromSlice, or a file OpenFile could
// not replay as it reads it (not in arrival order, or a pipe).
func Held(src Source) bool {
	_, ok := src.(*sliceSource)
	return ok
}

// OpenFile checks the trace file at path as ReadFile does (the same errors) and returns it as
// a Source. When the file is a regular file that lists its requests in arrival order, as
// recorded traces do, the Source holds only the requests of multi-turn sessions and reads the
// file again on each pass; otherwise (unsorted, or a pipe that can be read only once) it holds
// the whole trace, sorted, as ReadFile returns it.
func OpenFile(path string, opts ReadOptions) (Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	if !st.Mode().IsRegular() {
		// A pipe (--trace <(zcat t.jsonl.gz)) or a device can be read only once: hold it.
		var reqs []Request
		if IsMsgpackName(path) {
			reqs, err = ReadMsgpack(f, path, opts)
		} else {
			reqs, err = Read(f, path, opts)
		}
		if err != nil {
			return nil, err
		}
		return FromSlice(reqs), nil
	}
	sc := &openScan{fs: &fileSource{path: path, opts: opts, id: fileID{st.Size(), st.ModTime()}},
		b: NewStatsBuilder(DefaultBlockTokens), seed: maphash.MakeSeed(), turns: map[turnKey]struct{}{}}
	errf := func(*LineError) bool { sc.fallback = true; return false }
	if IsMsgpackName(path) {
		err = scanMsgpack(f, path, opts, errf, sc.emit)
		if err == errUnreadable {
			err = nil
		}
	} else {
		err = scanJSONL(f, path, opts, errf, sc.emit)
	}
	if err != nil {
		return nil, err
	}
	if !sc.fallback && repeatedHash(sc.ids) {
		sc.fallback = true // a repeated id, or (for a million ids, about once in 10^7 traces) a collision
	}
	sc.ids = nil
	if sc.fallback || sc.fs.n == 0 {
		reqs, err := ReadFile(path, opts)
		if err != nil {
			return nil, err
		}
		return FromSlice(reqs), nil
	}
	sc.fs.stats = sc.b.Stats()
	return sc.fs, nil
}

// turnKey is one turn of one session.
type turnKey struct {
	session string
	turn    int
}

// openScan is OpenFile's one pass over a regular trace file: it fills fs (the sessions'
// requests, the count, the first and last arrival) and the stats, and notes whether the file
// is one fileSource cannot replay as it reads it (fallback: a problem, a possible duplicate
// or unsorted arrivals, for ReadFile to decide).
type openScan struct {
	fs       *fileSource
	b        *StatsBuilder
	seed     maphash.Seed
	ids      []uint64 // hashes of the ids: 8 bytes per request, checked for repeats after the pass
	turns    map[turnKey]struct{}
	fallback bool
}

// emit takes the next request of the file; false stops the scan (a fallback).
func (sc *openScan) emit(q *Request) bool {
	fs := sc.fs
	if q.ID == "" {
		q.ID = fmt.Sprintf("r%d", q.Line)
	}
	sc.ids = append(sc.ids, maphash.String(sc.seed, q.ID))
	if q.hasAgentic() {
		sc.fallback = true // dependencies are resolved across lines: let ReadFile decide
		return false
	}
	if fs.n > 0 && q.Arrival < fs.last {
		sc.fallback = true
		return false
	}
	if q.Session != "" {
		if q.Turn > 0 {
			k := turnKey{q.Session, q.Turn}
			if _, dup := sc.turns[k]; dup {
				sc.fallback = true
				return false
			}
			sc.turns[k] = struct{}{}
		}
		fs.sessions = append(fs.sessions, *q)
		fs.sessionPos = append(fs.sessionPos, fs.n)
	}
	if fs.n == 0 {
		fs.first = q.Arrival
	}
	fs.last = q.Arrival
	fs.n++
	sc.b.Add(q)
	return true
}

// repeatedHash sorts ids and says whether one appears twice.
func repeatedHash(ids []uint64) bool {
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return true
		}
	}
	return false
}

// fileSource is a sorted trace file read again on each pass.
type fileSource struct {
	path        string
	opts        ReadOptions
	id          fileID
	n           int
	first, last time.Duration
	stats       Stats
	sessions    []Request
	sessionPos  []int
}

// fileID tells whether a file changed since it was checked.
type fileID struct {
	size int64
	mod  time.Time
}

func identify(f *os.File) (fileID, error) {
	st, err := f.Stat()
	if err != nil {
		return fileID{}, err
	}
	return fileID{st.Size(), st.ModTime()}, nil
}

func (s *fileSource) Len() int                          { return s.n }
func (s *fileSource) Stats() Stats                      { return s.stats }
func (s *fileSource) Span() (first, last time.Duration) { return s.first, s.last }

func (s *fileSource) Sessions(fn func(int, *Request)) {
	for i := range s.sessions {
		fn(s.sessionPos[i], &s.sessions[i])
	}
}

// errChanged reports a trace file that changed between two passes.
var errChanged = errors.New("the trace file changed since the run started")

func (s *fileSource) open() (*os.File, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("read trace again: %w", err)
	}
	if id, err := identify(f); err != nil || id != s.id {
		f.Close()
		if err == nil {
			err = errChanged
		}
		return nil, fmt.Errorf("read trace %s again: %w", s.path, err)
	}
	return f, nil
}

func (s *fileSource) Singles(fn func(int, *Request) error) error {
	f, err := s.open()
	if err != nil {
		return err
	}
	defer f.Close()
	pos := 0
	var fnErr error
	var problem *LineError
	emit := func(q *Request) bool {
		p := pos
		pos++
		if q.Session != "" {
			return true
		}
		if q.ID == "" {
			q.ID = fmt.Sprintf("r%d", q.Line)
		}
		fnErr = fn(p, q)
		return fnErr == nil
	}
	errf := func(e *LineError) bool { problem = e; return false }
	if IsMsgpackName(s.path) {
		err = scanMsgpack(f, s.path, s.opts, errf, emit)
		if err == errUnreadable {
			err = nil
		}
	} else {
		err = scanJSONL(f, s.path, s.opts, errf, emit)
	}
	switch {
	case fnErr != nil:
		return fnErr
	case err != nil:
		return err
	case problem != nil:
		return fmt.Errorf("read trace again: %w (%w)", problem, errChanged)
	case pos != s.n:
		return fmt.Errorf("read trace %s again: %d requests, %d when it was checked: %w", s.path, pos, s.n, errChanged)
	}
	return nil
}

func (s *fileSource) Requests() ([]Request, error) {
	f, err := s.open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if IsMsgpackName(s.path) {
		return ReadMsgpack(f, s.path, s.opts)
	}
	return Read(f, s.path, s.opts)
}
