package calibrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// vllmBench holds the per-request lists of a vLLM `vllm bench serve --save-result
// --save-detailed` result file (vllm/benchmarks/serve.py): index i of every list is request
// i. Times are seconds: start_times are the client's perf_counter when request i was sent,
// ttfts from then to its first token, itls the gaps between its later chunks, latencies from
// then to its end. Older vLLM versions write no start_times or latencies; the other fields of
// the file (summary statistics, generated texts, configuration) are not needed and ignored.
type vllmBench struct {
	InputLens  []int       `json:"input_lens"`
	OutputLens []int       `json:"output_lens"`
	TTFTs      []float64   `json:"ttfts"`
	ITLs       [][]float64 `json:"itls"`
	Latencies  []float64   `json:"latencies"`
	StartTimes []float64   `json:"start_times"`
	Errors     []string    `json:"errors"`
}

// Bounds on a vLLM file: requests, and seconds for any time or the span of one request.
const (
	maxVLLMRequests = 10_000_000
	maxVLLMSeconds  = 1e7 // about 116 days
	maxVLLMTokens   = 100_000_000
)

// ParseVLLMBench converts a vLLM `bench serve --save-detailed` result file into Records, one
// per request in file order: Intended and Sent are the request's start time (vLLM measures
// from the send), FirstToken is start + TTFT, one chunk per entry of itls after it, End is
// start + latency (or the last chunk when the file has no latencies). Input and output token
// counts are vLLM's (its tokenizer's, or the server's usage). When a request has one chunk
// per output token each chunk carries one token; otherwise the tokens are spread over its
// chunks as evenly as whole numbers allow. A request with an error is a failed Record with the
// error text. name (usually the file's path) prefixes every error, which names the field and
// the request index.
func ParseVLLMBench(data []byte, name string) ([]metrics.Record, error) {
	f, err := decodeVLLM(data, name)
	if err != nil {
		return nil, err
	}
	t0, err := f.check(name)
	if err != nil {
		return nil, err
	}
	recs := make([]metrics.Record, len(f.TTFTs))
	for i := range recs {
		if err := f.record(&recs[i], i, t0, name); err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// decodeVLLM decodes a result file, its syntax and type errors placed at a line and column.
func decodeVLLM(data []byte, name string) (*vllmBench, error) {
	var f vllmBench
	if err := json.Unmarshal(data, &f); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := lineCol(data, se.Offset)
			return nil, fmt.Errorf("%s:%d:%d: invalid vLLM result JSON: %w", name, line, col, err)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			line, col := lineCol(data, te.Offset)
			return nil, fmt.Errorf("%s:%d:%d: field %q: %s is not a valid value here: %w", name, line, col, te.Field, te.Value, err)
		}
		return nil, fmt.Errorf("%s: invalid vLLM result file: %w", name, err)
	}
	return &f, nil
}

// check says what is wrong with the file's lists as a whole (missing, too long, of unequal
// lengths, start times that are not times or too far apart) and returns the earliest start
// time, the zero of the records' clock.
func (f *vllmBench) check(name string) (t0 float64, err error) {
	n := len(f.TTFTs)
	switch {
	case n == 0:
		return 0, fmt.Errorf("%s: no \"ttfts\": not a vLLM bench serve result saved with --save-detailed", name)
	case n > maxVLLMRequests:
		return 0, fmt.Errorf("%s: %d requests exceed the limit of %d", name, n, maxVLLMRequests)
	case len(f.StartTimes) == 0:
		return 0, fmt.Errorf("%s: no \"start_times\": this vLLM version does not record when each request was sent, so its run cannot be replayed; use a vLLM whose bench serve writes start_times", name)
	}
	for _, l := range []struct {
		field string
		n     int
	}{{"input_lens", len(f.InputLens)}, {"output_lens", len(f.OutputLens)}, {"itls", len(f.ITLs)},
		{"start_times", len(f.StartTimes)}, {"latencies", len(f.Latencies)}, {"errors", len(f.Errors)}} {
		if l.n != n && !(l.n == 0 && (l.field == "latencies" || l.field == "errors")) {
			return 0, fmt.Errorf("%s: field %q has %d entries but \"ttfts\" has %d: every list must have one entry per request", name, l.field, l.n, n)
		}
	}
	t0 = math.Inf(1)
	for i, s := range f.StartTimes {
		if !finite(s) || math.Abs(s) > 1e12 {
			return 0, fmt.Errorf("%s: request %d: field \"start_times\": %v is not a time", name, i, s)
		}
		t0 = math.Min(t0, s)
	}
	for i, s := range f.StartTimes {
		if s-t0 > maxVLLMSeconds {
			return 0, fmt.Errorf("%s: request %d: field \"start_times\": %v s after the first request, more than %g s", name, i, s-t0, float64(maxVLLMSeconds))
		}
	}
	return t0, nil
}

// vllmNS is sec seconds in nanoseconds.
func vllmNS(sec float64) int64 { return int64(math.Round(sec * 1e9)) }

// vllmValid says whether sec is a duration the file may hold: finite, >= 0 and at most
// maxVLLMSeconds.
func vllmValid(sec float64) bool { return finite(sec) && sec >= 0 && sec <= maxVLLMSeconds }

// record fills rec from request i of the file, times counted from t0.
func (f *vllmBench) record(rec *metrics.Record, i int, t0 float64, name string) error {
	start := vllmNS(f.StartTimes[i] - t0)
	*rec = metrics.Record{ID: strconv.Itoa(i), Intended: start, Dispatched: start, Sent: start, Headers: start,
		InputTokens: f.InputLens[i], OutputTokens: f.OutputLens[i], TokenSource: metrics.TokensFromUsage,
		RequestedTokens: f.OutputLens[i], ServerInputTokens: f.InputLens[i], ServerOutputTokens: f.OutputLens[i]}
	if len(f.Errors) > 0 && f.Errors[i] != "" {
		rec.Failure, rec.Error = metrics.FailServerError, metrics.TruncateError(f.Errors[i])
		rec.End = start
		return nil
	}
	if f.InputLens[i] < 0 || f.OutputLens[i] < 0 || f.InputLens[i] > maxVLLMTokens || f.OutputLens[i] > maxVLLMTokens {
		return fmt.Errorf("%s: request %d: fields \"input_lens\" and \"output_lens\" must be in [0, %d], got %d and %d", name, i, maxVLLMTokens, f.InputLens[i], f.OutputLens[i])
	}
	chunks, err := f.chunks(i, start, name)
	if err != nil {
		return err
	}
	t := chunks[len(chunks)-1].T
	rec.FirstToken, rec.Chunks, rec.End = chunks[0].T, chunks, t
	if len(f.Latencies) > 0 {
		if l := f.Latencies[i]; vllmValid(l) {
			rec.End = max(t, start+vllmNS(l))
		} else {
			return fmt.Errorf("%s: request %d: field \"latencies\": %v must be a time >= 0 s", name, i, l)
		}
	}
	if f.OutputLens[i] == 0 {
		rec.Failure = metrics.FailEmpty
	}
	return nil
}

// chunks are request i's chunks, sent at start: the first token at its TTFT, one chunk per
// inter-token latency after it, the output tokens spread over them.
func (f *vllmBench) chunks(i int, start int64, name string) ([]metrics.Chunk, error) {
	if !vllmValid(f.TTFTs[i]) {
		return nil, fmt.Errorf("%s: request %d: field \"ttfts\": %v must be a time >= 0 s", name, i, f.TTFTs[i])
	}
	itls := f.ITLs[i]
	chunks := make([]metrics.Chunk, 0, len(itls)+1)
	t := start + vllmNS(f.TTFTs[i])
	chunks = append(chunks, metrics.Chunk{T: t})
	for j, g := range itls {
		if !vllmValid(g) {
			return nil, fmt.Errorf("%s: request %d: field \"itls\"[%d]: %v must be a time >= 0 s", name, i, j, g)
		}
		t += vllmNS(g)
		if t-start > vllmNS(maxVLLMSeconds) {
			return nil, fmt.Errorf("%s: request %d: field \"itls\": the request lasts more than %g s", name, i, float64(maxVLLMSeconds))
		}
		chunks = append(chunks, metrics.Chunk{T: t})
	}
	spread(chunks, f.OutputLens[i])
	return chunks, nil
}

// spread gives chunks tokens in all, as evenly as whole numbers allow, the first chunks
// taking the remainder (one token each when the counts match).
func spread(chunks []metrics.Chunk, tokens int) {
	per, extra := tokens/len(chunks), tokens%len(chunks)
	for j := range chunks {
		k := per
		if j < extra {
			k++
		}
		chunks[j].Tokens = int32(k)
	}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// lineCol turns a byte offset of data into a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// isJSON reports whether data looks like a JSON object (a vLLM result file) rather than a
// records file.
func isJSON(data []byte) bool {
	return strings.HasPrefix(strings.TrimLeft(string(data[:min(len(data), 64)]), " \t\r\n\ufeff"), "{")
}
