package engineadapter

import (
	"context"
	"slices"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/traces"
)

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

// arrivals feeds a Simulation. Scaling by the rate can make distinct arrivals equal, and
// Simulate orders equal (scaled) arrivals by position: requests of one scaled arrival are
// gathered and added in position order.
type arrivals struct {
	sim       *refengine.Simulation
	out       *inOrder
	rateScale float64
	at        time.Duration
	batch     []pending
}

type pending struct {
	pos int
	q   refengine.SimRequest
}

func (f *arrivals) add(pos int, q *traces.Request) error {
	sr := SimRequest(q, f.rateScale)
	if len(f.batch) > 0 && sr.Arrival != f.at {
		if err := f.flush(); err != nil {
			return err
		}
	}
	f.at = sr.Arrival
	f.out.hold(pos, q)
	f.batch = append(f.batch, pending{pos, sr})
	return nil
}

func (f *arrivals) flush() error {
	slices.SortFunc(f.batch, func(a, b pending) int { return a.pos - b.pos })
	for i := range f.batch {
		if err := f.sim.Add(f.batch[i].pos, &f.batch[i].q); err != nil {
			return err
		}
	}
	clear(f.batch)
	f.batch = f.batch[:0]
	return nil
}

// inOrder keeps what a record needs of each request in flight and hands records to the sink
// in the order of the walk (arrival order, trace order among equal arrivals: the trace's own
// order for a sorted file): a finished request waits only for the ones before it.
type inOrder struct {
	sink  func(*metrics.Record)
	reqs  map[int]held // in flight, by position
	ready map[int]*metrics.Record
	added int // requests held so far
	next  int // the walk index of the next record to hand over
}

// held is a request in flight: its index in the walk and the fields TimelineRecord reads.
type held struct {
	k   int
	req traces.Request
}

func newInOrder(sink func(*metrics.Record)) *inOrder {
	return &inOrder{sink: sink, reqs: map[int]held{}, ready: map[int]*metrics.Record{}}
}

func (o *inOrder) hold(pos int, q *traces.Request) {
	o.reqs[pos] = held{o.added, traces.Request{ID: q.ID, Class: q.Class, Session: q.Session, Turn: q.Turn, OutputTokens: q.OutputTokens}}
	o.added++
}

// request returns the held fields of the request at pos.
func (o *inOrder) request(pos int) traces.Request { return o.reqs[pos].req }

// done hands rec, the record of the request at pos, to the sink, with every record after it in
// the walk that was waiting for it.
func (o *inOrder) done(pos int, rec *metrics.Record) {
	k := o.reqs[pos].k
	delete(o.reqs, pos)
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
