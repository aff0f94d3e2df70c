package traces

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/tokenizer"
)

// ImportFormats lists the formats Import understands.
var ImportFormats = []string{"azure", "burstgpt", "mooncake", "toolagent", "weka", "sharegpt", "jsonl", "msgpack"}

// ImportOptions controls Import. The zero value imports every valid row and fails on the first
// bad one.
type ImportOptions struct {
	// Model keeps only rows of this model, compared case-insensitively (burstgpt only).
	// Rows of other models are skipped silently.
	Model string
	// KeepModel fills each request's Model from the source's model name where the source
	// records one (burstgpt's Model column, weka's per-call model), so that a replay sends
	// each request to the model it was made for (issue 38). Off by default: the recorded
	// names (ChatGPT, GPT-4, claude-...) are rarely names the target server serves, and a
	// request to a model the server does not list fails with not_found.
	KeepModel bool
	// DropFailed skips rows that record a failed request, i.e. zero response/generated/output
	// tokens (azure, burstgpt, mooncake). Without it such a row is an error, because a trace
	// request must ask for at least one output token.
	DropFailed bool
	// SkipBad skips malformed rows (reporting each to OnSkip) instead of failing on the first.
	SkipBad bool
	// Limit stops after this many requests (0 = no limit), counted in file order.
	Limit int
	// Class tags every imported request. BurstGPT rows default to their Log Type
	// ("conversation" or "api"); the other formats default to no class.
	Class string
	// Lenient ignores unknown fields when importing llmbench's own jsonl or msgpack.
	Lenient bool
	// OnSkip, if set, is told about every skipped row (failed rows with DropFailed, malformed
	// rows with SkipBad, unusable ShareGPT conversations).
	OnSkip func(line int, reason string)

	// Agentic traces (toolagent, weka; FORMAT.md "Importers").

	// TPOT is the time per output token that estimates a recorded response's duration where
	// the trace does not record it (the wait before the next call is the gap less that
	// estimate); 0 means DefaultImportTPOT.
	TPOT time.Duration
	// OnBlockTokens, if set, is told the number of tokens per hash_ids block of the imported
	// trace when it is not DefaultBlockTokens (weka traces record theirs in block_size), so
	// that the caller can say how to replay it (run --prefix-block-tokens).
	OnBlockTokens func(tokens int)

	// The remaining options apply to ShareGPT, which has text but neither token counts nor times.

	// Tokenizer counts tokens of ShareGPT text (default tokenizer.Reference).
	Tokenizer tokenizer.Tokenizer
	// Rate is the arrival rate of ShareGPT conversations in requests per second (default 1).
	Rate float64
	// Poisson draws exponential gaps at Rate from Seed instead of constant spacing.
	Poisson bool
	Seed    int64
	// Chat emits messages ([system,] user) instead of prompt text.
	Chat bool
	// Sessions turns every user turn of a conversation into one request of a session whose
	// messages hold the whole history so far (implies Chat).
	Sessions bool
	// Think is the time between turns of a ShareGPT session (default 10 s); turn k+1 arrives
	// Think after turn k in the trace and carries think_s = Think.
	Think time.Duration
}

// Import converts a trace in a public format to requests sorted by arrival, with arrivals as
// offsets from the earliest row. Rows are read by column or field name; extra columns and
// fields are ignored. Problems are *LineError values naming name, the line and the column.
//
// Formats: "azure" (Azure LLM inference traces 2023/2024 CSV), "burstgpt" (BurstGPT CSV, both
// layouts), "mooncake" (Mooncake JSONL with 512-token hash_ids), "toolagent" (Mooncake's
// toolagent trace, sessions rebuilt from hash_ids chains), "weka" (Weka / kv-cache-tester
// agentic coding traces with sub-agents), "sharegpt" (ShareGPT JSON),
// "jsonl" and "msgpack" (llmbench's own encodings). See FORMAT.md for the column mapping.
func Import(format string, r io.Reader, name string, opts ImportOptions) ([]Request, error) {
	if opts.Model != "" && format != "burstgpt" {
		return nil, fmt.Errorf("import %s: the model filter applies to burstgpt only", format)
	}
	if opts.Limit < 0 {
		return nil, fmt.Errorf("import: limit must be >= 0 (got %d)", opts.Limit)
	}
	var reqs []Request
	var err error
	switch format {
	case "azure":
		reqs, err = importAzure(r, name, opts)
	case "burstgpt":
		reqs, err = importBurstGPT(r, name, opts)
	case "mooncake":
		reqs, err = importMooncake(r, name, opts)
	case "toolagent":
		reqs, err = importToolAgent(r, name, opts)
	case "weka":
		reqs, err = importWeka(r, name, opts)
	case "sharegpt":
		reqs, err = importShareGPT(r, name, opts)
	case "jsonl":
		reqs, err = Read(r, name, ReadOptions{Lenient: opts.Lenient})
		if err == nil && opts.Limit > 0 && len(reqs) > opts.Limit {
			reqs = reqs[:opts.Limit]
		}
		return reqs, err
	case "msgpack":
		reqs, err = ReadMsgpack(r, name, ReadOptions{Lenient: opts.Lenient})
		if err == nil && opts.Limit > 0 && len(reqs) > opts.Limit {
			reqs = reqs[:opts.Limit]
		}
		return reqs, err
	default:
		return nil, fmt.Errorf("unknown import format %q (use one of %s)", format, strings.Join(ImportFormats, ", "))
	}
	if err != nil {
		return nil, err
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%s: no requests imported (check the format, the model filter and skipped rows)", name)
	}
	for i := range reqs {
		for _, c := range []struct {
			field string
			n     int
		}{{"input tokens", reqs[i].InputTokens}, {"output tokens", reqs[i].OutputTokens}} {
			if c.n > MaxTokens {
				return nil, &LineError{File: name, Line: reqs[i].Line, Field: c.field,
					Reason: fmt.Sprintf("%d is past the token cap of trace format v1 (%d)", c.n, MaxTokens)}
			}
		}
		if reqs[i].Arrival < 0 || reqs[i].Arrival > MaxSeconds*time.Second {
			return nil, &LineError{File: name, Line: reqs[i].Line, Field: "timestamp",
				Reason: fmt.Sprintf("lies %v from the earliest row, beyond the %v seconds a trace may span", reqs[i].Arrival, MaxSeconds)}
		}
	}
	var first *LineError
	reqs = finish(reqs, name, func(e *LineError) bool { first = e; return false })
	if first != nil {
		return nil, first
	}
	return reqs, nil
}

// rowSink collects rows and applies SkipBad, DropFailed and Limit.
type rowSink struct {
	name string
	opts ImportOptions
	reqs []Request
}

// bad handles a malformed row: an error, or a skip with SkipBad.
func (s *rowSink) bad(line int, field, reason string) error {
	if s.opts.SkipBad {
		s.skip(line, field+": "+reason)
		return nil
	}
	return &LineError{File: s.name, Line: line, Field: field, Reason: reason + " (or import with --skip-bad to skip such rows)"}
}

// failed handles a row recording a failed request (zero output tokens).
func (s *rowSink) failed(line int, field string) error {
	if s.opts.DropFailed {
		s.skip(line, field+" is 0 (a failed request)")
		return nil
	}
	return &LineError{File: s.name, Line: line, Field: field,
		Reason: "is 0: the row records a failed request (import with --drop-failed to skip such rows)"}
}

func (s *rowSink) skip(line int, reason string) {
	if s.opts.OnSkip != nil {
		s.opts.OnSkip(line, reason)
	}
}

// add appends a request and reports whether the limit allows more.
func (s *rowSink) add(r Request) bool {
	s.reqs = append(s.reqs, r)
	return s.opts.Limit == 0 || len(s.reqs) < s.opts.Limit
}

// csvTable reads a CSV file by column name.
type csvTable struct {
	name string
	r    *csv.Reader
	col  map[string]int // normalized header name -> index
	head []string
}

func normCol(s string) string {
	return strings.ToLower(strings.TrimSpace(strings.TrimPrefix(s, "\xef\xbb\xbf")))
}

func openCSV(r io.Reader, name string, required []string) (*csvTable, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		if err == io.EOF {
			return nil, &LineError{File: name, Line: 1, Field: "header", Reason: "the file is empty (expected a CSV header row)"}
		}
		return nil, csvErr(name, err)
	}
	t := &csvTable{name: name, r: cr, col: map[string]int{}, head: append([]string(nil), head...)}
	for i, h := range head {
		t.col[normCol(h)] = i
	}
	for _, c := range required {
		if _, ok := t.col[normCol(c)]; !ok {
			return nil, &LineError{File: name, Line: 1, Field: "header",
				Reason: fmt.Sprintf("missing column %q (found %s); is this the right --format?", c, strings.Join(t.head, ", "))}
		}
	}
	return t, nil
}

func csvErr(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &LineError{File: name, Line: pe.Line, Field: "csv", Reason: pe.Err.Error(), Err: err}
	}
	return fmt.Errorf("read %s: %w", name, err)
}

// next returns the next row and its line, io.EOF at the end.
func (t *csvTable) next() ([]string, int, error) {
	rec, err := t.r.Read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return nil, pe.StartLine, csvErr(t.name, err)
		}
		return nil, 0, err
	}
	line, _ := t.r.FieldPos(0)
	return rec, line, nil
}

// get returns the value of column c (which may be absent: ok false), with invalid UTF-8
// replaced so that text copied into a trace survives JSON.
func (t *csvTable) get(rec []string, c string) (string, bool) {
	i, ok := t.col[normCol(c)]
	if !ok || i >= len(rec) {
		return "", false
	}
	return strings.ToValidUTF8(strings.TrimSpace(rec[i]), "\uFFFD"), true
}

// rows walks a CSV table, handing each row to fn, and turns CSV syntax errors into bad rows.
func (t *csvTable) rows(sink *rowSink, fn func(rec []string, line int) (more bool, err error)) error {
	lastLine := -1
	for {
		rec, line, err := t.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || !sink.opts.SkipBad || line <= lastLine {
				return err
			}
			sink.skip(le.Line, "csv: "+le.Reason)
			lastLine = line
			continue
		}
		lastLine = line
		more, err := fn(rec, line)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
}

// parseCount parses a token count column: an integer >= 0 (integral floats such as "12.0"
// are accepted).
func parseCount(s string) (int, bool) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		if i < 0 || i > math.MaxInt32 {
			return 0, false
		}
		return int(i), true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

// rebase shifts arrivals so that the earliest is at offset 0.
func rebase(reqs []Request) {
	if len(reqs) == 0 {
		return
	}
	min := reqs[0].Arrival
	for _, r := range reqs {
		if r.Arrival < min {
			min = r.Arrival
		}
	}
	for i := range reqs {
		reqs[i].Arrival -= min
	}
}

// numberTurns numbers the requests of each session 1, 2, ... in arrival order.
func numberTurns(reqs []Request) {
	idx := make([]int, len(reqs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return reqs[idx[a]].Arrival < reqs[idx[b]].Arrival })
	turn := map[string]int{}
	for _, i := range idx {
		if s := reqs[i].Session; s != "" {
			turn[s]++
			reqs[i].Turn = turn[s]
		}
	}
}

// importedModel is a source's model name as a Request's Model (ImportOptions.KeepModel): ""
// (the run's --model) when the name is empty or one the trace format refuses.
func importedModel(name string) string {
	name = strings.TrimSpace(name)
	if m, why := modelField(name); why == "" {
		return m
	}
	return ""
}
