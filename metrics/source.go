package metrics

import "errors"

// Source yields Records. Each may be called more than once (Summarize makes two passes) and
// must yield the same records each time. fn must not keep the pointer after it returns.
type Source interface {
	Each(fn func(*Record) error) error
}

// SliceSource is a Source over Records in memory.
type SliceSource []Record

// Each calls fn for every record in order.
func (s SliceSource) Each(fn func(*Record) error) error {
	for i := range s {
		if err := fn(&s[i]); err != nil {
			return err
		}
	}
	return nil
}

// FileSource reads a requests.msgpack file on every pass. A file cut short (an interrupted
// run) yields its complete records and then an error wrapping ErrTruncated; Summarize keeps
// those records and adds a warning.
func FileSource(path string) Source { return fileSource(path) }

type fileSource string

func (f fileSource) Each(fn func(*Record) error) error { return EachRecord(string(f), fn) }

// MultiSource chains sources, for pooling several runs or shards.
func MultiSource(srcs ...Source) Source { return multiSource(srcs) }

type multiSource []Source

// Each goes through every source in order. A truncated source does not stop the chain: its
// error is returned after the last source (joined with any other truncation).
func (m multiSource) Each(fn func(*Record) error) error {
	var truncated []error
	for _, s := range m {
		if err := s.Each(fn); err != nil {
			if errors.Is(err, ErrTruncated) {
				truncated = append(truncated, err)
				continue
			}
			return err
		}
	}
	return errors.Join(truncated...)
}
