package runner

import (
	"sync"

	"github.com/llmbench/llmbench/metrics"
)

// liveSummary runs metrics.Summarize beside the producer (Options.SummarizeLive): its first
// pass reads the Records as the producer hands them over, so that they are not decoded back
// from the records file; the second pass reads the file once it is complete. The summary is
// the one Summarize makes of the file: the same Records in the same order.
type liveSummary struct {
	mu    sync.Mutex // orders the file's writes and the first pass's records alike
	batch []*metrics.Record
	recs  chan []*metrics.Record
	ready chan struct{} // closed when the records file is complete (or the run failed)
	file  metrics.Source
	pass  int

	done chan struct{}
	sum  *metrics.Summary
	err  error
}

const liveBatch = 256

func startLiveSummary(file metrics.Source, opts metrics.Options) *liveSummary {
	l := &liveSummary{recs: make(chan []*metrics.Record, 4), ready: make(chan struct{}), file: file, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		l.sum, l.err = metrics.Summarize(l, opts)
	}()
	return l
}

// sink wraps write (the records file's) so that the first pass sees each Record in the order
// it was written.
func (l *liveSummary) sink(write func(*metrics.Record)) func(*metrics.Record) {
	return func(r *metrics.Record) {
		l.mu.Lock()
		defer l.mu.Unlock()
		write(r)
		l.batch = append(l.batch, r)
		if len(l.batch) == liveBatch {
			l.recs <- l.batch
			l.batch = make([]*metrics.Record, 0, liveBatch)
		}
	}
}

// produced says that the producer is done; fileReady that the records file is complete (or
// will not be read: the run failed).
func (l *liveSummary) produced() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.batch) > 0 {
		l.recs <- l.batch
		l.batch = nil
	}
	close(l.recs)
}

func (l *liveSummary) fileReady() { close(l.ready) }

// result waits for the summary.
func (l *liveSummary) result() (*metrics.Summary, error) {
	<-l.done
	return l.sum, l.err
}

// Each is the Source Summarize reads: the Records handed over, then the file.
func (l *liveSummary) Each(fn func(*metrics.Record) error) error {
	l.pass++
	if l.pass > 1 {
		<-l.ready
		return l.file.Each(fn)
	}
	for b := range l.recs {
		for _, r := range b {
			if err := fn(r); err != nil {
				go func() { // let the producer finish
					for range l.recs {
					}
				}()
				return err
			}
		}
	}
	return nil
}
