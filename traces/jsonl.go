package traces

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ReadOptions controls how strictly a trace is read.
type ReadOptions struct {
	// Lenient ignores unknown fields (in the object and in messages) instead of rejecting them.
	// Malformed known fields are errors either way.
	Lenient bool

	// dir is the directory of the trace file: image paths are relative to it (images.go).
	dir string
}

// ReadFile reads a trace file: msgpack when the name ends in ".msgpack", JSONL (format v1)
// otherwise. Errors are *LineError values naming path, line and field.
func ReadFile(path string, opts ReadOptions) ([]Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	if IsMsgpackName(path) {
		return ReadMsgpack(f, path, opts)
	}
	return Read(f, path, opts)
}

// IsMsgpackName reports whether a file name selects the msgpack trace encoding.
func IsMsgpackName(path string) bool {
	return strings.EqualFold(filepath.Ext(path), ".msgpack")
}

// Read reads a JSONL (format v1) trace from r; name is used in errors. Blank lines and lines
// whose first non-blank character is '#' are skipped. It returns the requests sorted by
// Arrival (stable, so equal arrivals keep file order) or the first problem as a *LineError.
// An empty trace (no requests) is an error.
func Read(r io.Reader, name string, opts ReadOptions) ([]Request, error) {
	var first *LineError
	reqs, err := readJSONL(r, name, opts, func(e *LineError) bool { first = e; return false })
	if err != nil {
		return nil, err
	}
	if first != nil {
		return nil, first
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%s: no requests (every line is blank or a comment)", name)
	}
	return reqs, nil
}

// Check reads a JSONL trace like Read but collects up to max problems (all when max <= 0)
// instead of stopping at the first. It returns the number of requests read; err is only set
// for I/O failures.
func Check(r io.Reader, name string, opts ReadOptions, max int) (n int, problems []*LineError, err error) {
	reqs, err := readJSONL(r, name, opts, func(e *LineError) bool {
		problems = append(problems, e)
		return max <= 0 || len(problems) < max
	})
	return len(reqs), problems, err
}

// CheckFile is Check on a file, msgpack or JSONL by name as in ReadFile.
func CheckFile(path string, opts ReadOptions, max int) (int, []*LineError, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	if IsMsgpackName(path) {
		var problems []*LineError
		reqs, err := readMsgpack(f, path, opts, func(e *LineError) bool {
			problems = append(problems, e)
			return max <= 0 || len(problems) < max
		})
		return len(reqs), problems, err
	}
	return Check(f, path, opts, max)
}

// readJSONL is the reader behind Read and Check. errf receives each problem and says whether
// to go on; after any problem the returned requests are only useful for counting.
func readJSONL(r io.Reader, name string, opts ReadOptions, errf func(*LineError) bool) ([]Request, error) {
	return collect(name, errf, func(errf func(*LineError) bool, emit func(*Request) bool) error {
		return scanJSONL(r, name, opts, errf, emit)
	})
}

// collect runs a scan (scanJSONL, scanMsgpack) and returns its requests checked across lines
// (finish), or nil once errf said stop. errUnreadable from the scan means errf has the problem.
func collect(name string, errf func(*LineError) bool, scan func(errf func(*LineError) bool, emit func(*Request) bool) error) ([]Request, error) {
	var reqs []Request
	stopped := false
	err := scan(func(e *LineError) bool {
		if !errf(e) {
			stopped = true
		}
		return !stopped
	}, func(q *Request) bool { reqs = append(reqs, *q); return true })
	if err == errUnreadable {
		return nil, nil
	}
	if err != nil || stopped {
		return nil, err
	}
	return finish(reqs, name, errf), nil
}

// scanJSONL decodes the lines of r in order. Each valid request goes to emit (a request of its
// own, which it may keep; false stops the scan) and each problem to errf (false stops the scan). It
// returns read errors only.
func scanJSONL(r io.Reader, name string, opts ReadOptions, errf func(*LineError) bool, emit func(*Request) bool) error {
	opts.dir = traceDir(name)
	br := bufio.NewReaderSize(r, 64<<10)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("read %s: line %d: %w", name, lineNo, err)
		}
		atEOF := err == io.EOF
		if atEOF && len(line) == 0 {
			break
		}
		complete := !atEOF // the line ended with a newline
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if lineNo == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // UTF-8 byte order mark
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 || trimmed[0] == '#' {
			if atEOF {
				break
			}
			continue
		}
		if req, ok := fastRecord(trimmed, opts); ok {
			req.Line = lineNo
			if !emit(&req) {
				return nil
			}
			if atEOF {
				break
			}
			continue
		}
		ms, perr := parseObject(trimmed)
		if perr != nil {
			le := &LineError{File: name, Line: lineNo, Reason: perr.Error(), Err: perr}
			if errors.Is(perr, io.ErrUnexpectedEOF) {
				if complete {
					le.Reason = "incomplete JSON object (each request must be one whole object on one line)"
				} else {
					le.Reason = "the last line is cut short (the file ends inside a JSON object; was it truncated?)"
				}
			}
			if !errf(le) {
				return nil
			}
		} else {
			req, ferrs := decodeRecord(ms, opts)
			req.Line = lineNo
			for _, fe := range ferrs {
				if !errf(&LineError{File: name, Line: lineNo, Field: fe.field, Reason: fe.reason}) {
					return nil
				}
			}
			if len(ferrs) == 0 && !emit(&req) {
				return nil
			}
		}
		if atEOF {
			break
		}
	}
	return nil
}

// errJSON is a JSON-level problem with a line.
type errJSON struct {
	msg string
	err error
}

func (e *errJSON) Error() string { return e.msg }
func (e *errJSON) Unwrap() error { return e.err }

// parseObject decodes one line holding a single JSON object into its members, in order,
// keeping numbers as json.Number.
func parseObject(line []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonErr(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		what := "a value"
		if ok && d == '[' {
			what = "an array"
		}
		return nil, &errJSON{msg: "each line must be one JSON object {...} (got " + what + ")"}
	}
	var ms []member
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, jsonErr(err)
		}
		key, _ := kt.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, jsonErr(err)
		}
		ms = append(ms, member{key, v})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, jsonErr(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return nil, jsonErr(err)
		}
		return nil, &errJSON{msg: "unexpected data after the JSON object (one object per line)"}
	}
	return ms, nil
}

func jsonErr(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &errJSON{msg: fmt.Sprintf("invalid JSON at column %d: %s", se.Offset, se.Error()), err: err}
	}
	return &errJSON{msg: "invalid JSON: " + err.Error(), err: err}
}

// wireRequest is a Request as WriteJSONL writes it: v1 field names in canonical order.
type wireRequest struct {
	ID           string      `json:"id,omitempty" msgpack:"id,omitempty"`
	ArrivalS     json.Number `json:"arrival_s" msgpack:"-"`
	Class        string      `json:"class,omitempty" msgpack:"class,omitempty"`
	InputTokens  int         `json:"input_tokens" msgpack:"input_tokens"`
	OutputTokens int         `json:"output_tokens" msgpack:"output_tokens"`
	Session      string      `json:"session,omitempty" msgpack:"session,omitempty"`
	Turn         int         `json:"turn,omitempty" msgpack:"turn,omitempty"`
	ThinkS       json.Number `json:"think_s,omitempty" msgpack:"-"`
	HashIDs      []int64     `json:"hash_ids,omitempty" msgpack:"hash_ids,omitempty"`
	Temperature  *float64    `json:"temperature,omitempty" msgpack:"temperature,omitempty"`
	Seed         *int64      `json:"seed,omitempty" msgpack:"seed,omitempty"`
	Prompt       string      `json:"prompt,omitempty" msgpack:"prompt,omitempty"`
	Messages     []Message   `json:"messages,omitempty" msgpack:"messages,omitempty"`
	// Quality (issue 17); msgpack writes these as native values (wireMsgpack).
	Tools          json.RawMessage `json:"tools,omitempty" msgpack:"-"`
	ToolChoice     json.RawMessage `json:"tool_choice,omitempty" msgpack:"-"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty" msgpack:"-"`
	Expect         []Expectation   `json:"expect,omitempty" msgpack:"-"`
	// Agentic sessions.
	After      *[]int      `json:"after,omitempty" msgpack:"after,omitempty"`
	ToolDelayS json.Number `json:"tool_delay_s,omitempty" msgpack:"-"`
	Affinity   string      `json:"affinity,omitempty" msgpack:"affinity,omitempty"`
	// Per-request model (issue 38).
	Model string `json:"model,omitempty" msgpack:"model,omitempty"`
	// Cancellations (cancel.go); msgpack writes it as a float64 (wireMsgpack).
	CancelAfterMs json.Number `json:"cancel_after_ms,omitempty" msgpack:"-"`
}

func toWire(r *Request) wireRequest {
	w := wireRequest{
		ID: r.ID, ArrivalS: json.Number(formatSeconds(r.Arrival)), Class: r.Class,
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, Session: r.Session,
		Turn: r.Turn, HashIDs: r.HashIDs, Temperature: r.Temperature, Seed: r.Seed,
		Prompt: r.Prompt, Messages: r.Messages,
		Tools: r.Tools, ToolChoice: r.ToolChoice, ResponseFormat: r.ResponseFormat, Expect: r.Expect,
	}
	if r.Think != 0 {
		w.ThinkS = json.Number(formatSeconds(r.Think))
	}
	if r.After != nil {
		after := r.After
		w.After = &after
	}
	if r.ToolDelay != 0 {
		w.ToolDelayS = json.Number(formatSeconds(r.ToolDelay))
	}
	w.Affinity = r.Affinity
	w.Model = r.Model
	w.CancelAfterMs = cancelAfterMs(r.CancelAfter)
	return w
}

// WriteJSONL writes reqs as a format v1 JSONL trace, one object per line, fields in canonical
// order, omitting empty optional fields. Times are exact decimal seconds, so the output reads
// back (Read) to the same requests (except Line, and an empty ID, which Read assigns).
func WriteJSONL(w io.Writer, reqs []Request) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range reqs {
		if err := enc.Encode(toWire(&reqs[i])); err != nil {
			return fmt.Errorf("write trace: request %q: %w", reqs[i].ID, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	return nil
}

// WriteFile writes a trace to path, msgpack when the name ends in ".msgpack", JSONL otherwise.
func WriteFile(path string, reqs []Request) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create trace: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
	}()
	reqs = rebaseImages(reqs, filepath.Dir(path)) // image paths stay relative to the trace
	if IsMsgpackName(path) {
		return WriteMsgpack(f, reqs)
	}
	return WriteJSONL(f, reqs)
}
