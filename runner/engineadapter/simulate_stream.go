package engineadapter

import (
	"context"
	"slices"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/traces"
)

// A simulation of a trace read as it goes is a pipeline of three goroutines joined by channels
// of batches: the reader walks the trace in arrival order (parsing it), the simulator feeds
// the engine and collects finished timelines, and the writer turns them into Records and hands
// them to the sink in walk order. On two cores the reader's and the writer's work come off
// the simulator's path. Each stage holds only what is in flight.

// batchLen is the number of requests or timelines a channel message carries.
const batchLen = 256

// arriving is a request on its way to the engine.
type arriving struct {
	pos int
	q   refengine.SimRequest
	req traces.Request // what TimelineRecord reads of the trace request
}

// finished is a timeline on its way to the writer, with its index in the walk, and its output
// when the request asked for it (expect checks, --keep-output).
type finished struct {
	k   int
	tl  *refengine.Timeline
	req traces.Request
	out *refengine.Output
}

type pipeline struct {
	rateScale  float64
	keepOutput bool
	images     imageFiles // the reader's: each image file is read once
	models     modelCheck // the model names the engine serves (issue 38)
}

// run simulates trace on cfg and hands the records to sink in walk order. n is the number of
// records handed over.
func (p *pipeline) run(ctx context.Context, trace traces.Source, cfg refengine.Config,
	toRecord func(*finished) *metrics.Record, sink func(*metrics.Record)) (refengine.SimStats, refengine.Info, int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The writer: records in walk order.
	done := make(chan []finished, 4)
	written := make(chan int)
	go func() {
		out := reorder{sink: sink, ready: map[int]*metrics.Record{}}
		for b := range done {
			for i := range b {
				out.add(b[i].k, toRecord(&b[i]))
			}
		}
		written <- out.next
	}()

	// The simulator, on this goroutine: what it holds of each request in flight, by position.
	var inFlight heldQueue
	var outBatch []finished
	outputs := map[int]*refengine.Output{} // of finished requests, until their timeline follows
	sim, err := refengine.NewSimulation(cfg, func(pos int, tl *refengine.Timeline) {
		h, k := inFlight.take(pos)
		out := outputs[pos]
		delete(outputs, pos)
		outBatch = append(outBatch, finished{k, tl, h.request(), out})
		if len(outBatch) == batchLen {
			done <- outBatch
			outBatch = make([]finished, 0, batchLen)
		}
	})
	if err != nil {
		close(done)
		<-written
		return refengine.SimStats{}, refengine.Info{}, 0, err
	}
	sim.OnOutput = func(pos int, out refengine.Output) { outputs[pos] = &out }

	// The reader.
	arrive := make(chan []arriving, 4)
	var readErr error
	go func() {
		defer close(arrive)
		readErr = p.read(ctx, trace, arrive)
	}()

	// Scaling by the rate can make distinct arrivals equal, and Simulate orders equal (scaled)
	// arrivals by position: the requests of one scaled arrival are added in position order.
	var tie []arriving
	var tieAt time.Duration
	addTie := func() error {
		slices.SortFunc(tie, func(a, b arriving) int { return a.pos - b.pos })
		for i := range tie {
			if err := sim.Add(tie[i].pos, &tie[i].q); err != nil {
				return err
			}
		}
		clear(tie)
		tie = tie[:0]
		return nil
	}
	var simErr error
	for b := range arrive {
		if simErr != nil {
			continue // drain: the reader stops at the cancel
		}
		for i := range b {
			if len(tie) > 0 && b[i].q.Arrival != tieAt {
				if simErr = addTie(); simErr != nil {
					cancel()
					break
				}
			}
			tieAt = b[i].q.Arrival
			inFlight.add(b[i].pos, holdRequest(&b[i].req))
			tie = append(tie, b[i])
		}
	}
	var st refengine.SimStats
	if simErr == nil {
		simErr = readErr
	}
	if simErr == nil {
		simErr = addTie()
	}
	if simErr == nil {
		st, simErr = sim.Finish()
	}
	if len(outBatch) > 0 {
		done <- outBatch
	}
	close(done)
	n := <-written
	return st, sim.Info(), n, simErr
}

// read walks trace in arrival order and sends its requests to arrive in batches, until the
// walk ends or ctx is done.
func (p *pipeline) read(ctx context.Context, trace traces.Source, arrive chan<- []arriving) error {
	b := make([]arriving, 0, batchLen)
	var classes interner
	err := walkArrivalOrder(ctx, trace, func(pos int, q *traces.Request) error {
		if err := p.models.check(q); err != nil {
			return err
		}
		sr := simRequest(q, p.rateScale, p.keepOutput)
		if q.ImageCount() > 0 {
			one := []refengine.SimRequest{sr}
			if err := p.images.add(one, []traces.Request{*q}); err != nil {
				return err
			}
			sr = one[0]
		}
		// What FillRecord reads of the request (NaturalEnd: expect, tools, response_format).
		// The class is held until the record is made, by every waiting request at overload:
		// one string per class, not one per request (16 MB for a million).
		sr.Class = classes.intern(q.Class)
		b = append(b, arriving{pos, sr,
			traces.Request{ID: q.ID, Class: sr.Class, Session: q.Session, Turn: q.Turn, OutputTokens: q.OutputTokens,
				Expect: q.Expect, Tools: q.Tools, ResponseFormat: q.ResponseFormat, Model: q.Model}})
		if len(b) == batchLen {
			select {
			case arrive <- b:
			case <-ctx.Done():
				return ctx.Err()
			}
			b = make([]arriving, 0, batchLen)
		}
		return nil
	})
	if err == nil && len(b) > 0 {
		arrive <- b
	}
	return err
}

// walkArrivalOrder calls fn for every request of trace in arrival order, trace order among
// equal arrivals (Simulate's order), checking ctx as it goes.
func walkArrivalOrder(ctx context.Context, trace traces.Source, fn func(pos int, q *traces.Request) error) error {
	n := 0
	err := traces.InArrivalOrder(trace, func(pos int, q *traces.Request) error {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return fn(pos, q)
	})
	if err != nil {
		return err
	}
	return ctx.Err()
}

// reorder hands records to the sink in walk order: a finished request waits only for the
// ones before it.
type reorder struct {
	sink  func(*metrics.Record)
	ready map[int]*metrics.Record
	next  int // the walk index of the next record to hand over
}

func (o *reorder) add(k int, rec *metrics.Record) {
	if k != o.next {
		o.ready[k] = rec
		return
	}
	o.sink(rec)
	o.next++
	for {
		r, ok := o.ready[o.next]
		if !ok {
			return
		}
		delete(o.ready, o.next)
		o.sink(r)
		o.next++
	}
}

// interner hands out one copy of each distinct string, for the first maxInterned of them (the
// rest are returned as given, so a trace of distinct values does not grow it without bound).
type interner map[string]string

const maxInterned = 1024

func (in *interner) intern(v string) string {
	if c, ok := (*in)[v]; ok {
		return c
	}
	if *in == nil {
		*in = interner{}
	}
	if len(*in) < maxInterned {
		(*in)[v] = v
	}
	return v
}
