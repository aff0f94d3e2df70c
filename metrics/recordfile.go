package metrics

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// requests.msgpack layout: the 8-byte magic "LLMBREC1", then one frame per Record: a 4-byte
// big-endian length followed by that many bytes of msgpack. Frames are appended as requests
// finish, so a file cut short at any byte still yields every complete frame before the cut.
const recordMagic = "LLMBREC1"

// maxFrame bounds one Record's encoding; larger lengths mean corruption.
const maxFrame = 64 << 20

// ErrTruncated is returned (wrapped) by ReadRecords when the file ends inside a frame; the
// records before it are valid.
var ErrTruncated = errors.New("records file is truncated")

// RecordWriter appends Records to a requests.msgpack file. It is safe for concurrent use.
type RecordWriter struct {
	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	buf bytes.Buffer
	enc *msgpack.Encoder
	n   int
	err error
}

// CreateRecordFile creates (truncating) path and writes the header.
func CreateRecordFile(path string) (*RecordWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create records file: %w", err)
	}
	rw := &RecordWriter{f: f, w: bufio.NewWriterSize(f, 256<<10)}
	rw.enc = msgpack.NewEncoder(&rw.buf)
	rw.enc.UseCompactInts(true)
	if _, err := rw.w.WriteString(recordMagic); err != nil {
		f.Close()
		return nil, err
	}
	return rw, nil
}

// Write appends one Record. The first error sticks and is returned by every later call.
func (rw *RecordWriter) Write(r *Record) error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.err != nil {
		return rw.err
	}
	rw.buf.Reset()
	if err := rw.enc.Encode(r); err != nil {
		rw.err = fmt.Errorf("encode record %q: %w", r.ID, err)
		return rw.err
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(rw.buf.Len()))
	if _, err := rw.w.Write(hdr[:]); err != nil {
		rw.err = err
		return err
	}
	if _, err := rw.w.Write(rw.buf.Bytes()); err != nil {
		rw.err = err
		return err
	}
	// Hand each frame to the OS at once (one write call per record): a process killed with
	// SIGKILL then still leaves every completed record in the file. Flush and Close add the
	// fsync that makes them survive a machine crash too.
	if err := rw.w.Flush(); err != nil {
		rw.err = err
		return err
	}
	rw.n++
	return nil
}

// Count returns how many Records were written.
func (rw *RecordWriter) Count() int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.n
}

// Flush writes buffered frames to the file and fsyncs it, so that they survive a crash.
func (rw *RecordWriter) Flush() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.err != nil {
		return rw.err
	}
	if err := rw.w.Flush(); err != nil {
		rw.err = err
		return err
	}
	return rw.f.Sync()
}

// Close flushes, fsyncs and closes the file.
func (rw *RecordWriter) Close() error {
	err := rw.Flush()
	if cerr := rw.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// RecordReader reads Records one at a time from a requests.msgpack stream.
type RecordReader struct {
	r     *bufio.Reader
	buf   []byte
	n     int
	label string
}

// NewRecordReader checks the header of r. label names the source in errors.
func NewRecordReader(r io.Reader, label string) (*RecordReader, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	magic := make([]byte, len(recordMagic))
	if _, err := io.ReadFull(br, magic); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty records file (no header)", label)
		}
		return nil, fmt.Errorf("%s: reading header: %w", label, err)
	}
	if string(magic) != recordMagic {
		return nil, fmt.Errorf("%s: not a llmbench records file (bad header %q)", label, magic)
	}
	return &RecordReader{r: br, label: label}, nil
}

// Next decodes the next Record into rec (reset first). It returns io.EOF at a clean end and
// an error wrapping ErrTruncated when the stream stops inside a frame.
func (rr *RecordReader) Next(rec *Record) error {
	var hdr [4]byte
	n, err := io.ReadFull(rr.r, hdr[:])
	if err == io.EOF {
		return io.EOF
	}
	if err != nil {
		return fmt.Errorf("%s: record %d: %w (%d header bytes of 4)", rr.label, rr.n+1, ErrTruncated, n)
	}
	size := binary.BigEndian.Uint32(hdr[:])
	if size > maxFrame {
		return fmt.Errorf("%s: record %d: frame length %d is corrupt", rr.label, rr.n+1, size)
	}
	if cap(rr.buf) < int(size) {
		rr.buf = make([]byte, size)
	}
	rr.buf = rr.buf[:size]
	if _, err := io.ReadFull(rr.r, rr.buf); err != nil {
		return fmt.Errorf("%s: record %d: %w", rr.label, rr.n+1, ErrTruncated)
	}
	if err := unmarshalRecord(rr.buf, rec); err != nil {
		return fmt.Errorf("%s: record %d: corrupt: %w", rr.label, rr.n+1, err)
	}
	rr.n++
	return nil
}

// ReadRecords reads a whole requests.msgpack file. On a truncated or corrupt file it returns
// the records read before the damage together with the error.
func ReadRecords(path string) ([]Record, error) {
	var out []Record
	err := EachRecord(path, func(r *Record) error {
		out = append(out, *r)
		return nil
	})
	return out, err
}

// EachRecord calls fn for every Record in the file, in order. fn must not keep r.
func EachRecord(path string, fn func(r *Record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rr, err := NewRecordReader(f, path)
	if err != nil {
		return err
	}
	var rec Record
	for {
		if err := rr.Next(&rec); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if err := fn(&rec); err != nil {
			return err
		}
	}
}
