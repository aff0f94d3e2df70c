package reports

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/llmbench/llmbench/metrics"
)

// CSVColumns returns the column list of WriteCSV. Times are milliseconds; an empty cell means
// the event did not happen (no first token, never sent). error is the request's server or
// client message (Record.Error: scrubbed of the run's secrets and truncated when recorded).
// The prefix-cache columns (issue 34, docs/prefix-cache.md) are empty when the server
// reported no cached tokens for the request: cached_tokens (capped at input_tokens),
// cache_hit_fraction (cached_tokens / input_tokens, 4 decimals) and cache_source (the field
// they came from).
func CSVColumns() []string {
	return []string{
		"id", "class", "phase", "failure", "status", "ttft_ms", "tpot_ms", "e2e_ms", "queue_ms", "lag_ms",
		"max_gap_ms", "chunks", "input_tokens", "output_tokens", "token_source", "error",
		"cached_tokens", "cache_hit_fraction", "cache_source",
	}
}

// RecordTimes are one request's latencies in milliseconds, as the CSV export shows them. A
// false Has* flag means the quantity does not exist for the request.
type RecordTimes struct {
	TTFT, TPOT, E2E, Queue, Lag, MaxGap                float64
	HasTTFT, HasTPOT, HasE2E, HasQueue, HasLag, HasGap bool
}

// TimesOf derives r's per-request latencies with the definitions of metrics.Latency: TTFT and
// E2E from the intended send time, TPOT = (e2e - ttft) / (output tokens - 1) for successful
// requests with at least two tokens, queue = sent - dispatched, lag = dispatched - intended,
// max gap = largest gap between consecutive content chunks.
func TimesOf(r *metrics.Record) RecordTimes {
	const ms = 1e6
	var t RecordTimes
	if r.FirstToken != 0 {
		t.TTFT, t.HasTTFT = float64(r.FirstToken-r.Intended)/ms, true
	}
	if r.End != 0 {
		t.E2E, t.HasE2E = float64(r.End-r.Intended)/ms, true
	}
	if r.OK() && r.FirstToken != 0 && r.End != 0 && r.OutputTokens > 1 {
		t.TPOT, t.HasTPOT = float64(r.End-r.FirstToken)/ms/float64(r.OutputTokens-1), true
	}
	if r.Sent != 0 && r.Dispatched != 0 {
		t.Queue, t.HasQueue = float64(r.Sent-r.Dispatched)/ms, true
	}
	if r.Dispatched != 0 {
		t.Lag, t.HasLag = float64(r.Dispatched-r.Intended)/ms, true
	}
	if len(r.Chunks) > 1 {
		var g int64
		for i := 1; i < len(r.Chunks); i++ {
			g = max(g, r.Chunks[i].T-r.Chunks[i-1].T)
		}
		t.MaxGap, t.HasGap = float64(g)/ms, true
	}
	return t
}

// WriteCSV writes one CSV row per Record that each yields (for example metrics.EachRecord over
// requests.msgpack, or a slice), with the columns of CSVColumns. Text that a spreadsheet would
// run as a formula is prefixed with a single quote. When each fails part-way, the rows already
// read are written and the error is returned.
func WriteCSV(w io.Writer, each func(fn func(*metrics.Record) error) error) error {
	cw := csv.NewWriter(w)
	head := CSVColumns()
	if err := cw.Write(head); err != nil {
		return fmt.Errorf("write CSV header: %w", err)
	}
	row := make([]string, len(head))
	n := 0
	err := each(func(r *metrics.Record) error {
		n++
		t := TimesOf(r)
		row[0] = csvText(r.ID)
		row[1] = csvText(r.Class)
		row[2] = csvText(phaseName(r.Phase))
		row[3] = csvText(string(r.Failure))
		row[4] = ""
		if r.Status != 0 {
			row[4] = strconv.Itoa(r.Status)
		}
		row[5] = csvMs(t.TTFT, t.HasTTFT)
		row[6] = csvMs(t.TPOT, t.HasTPOT)
		row[7] = csvMs(t.E2E, t.HasE2E)
		row[8] = csvMs(t.Queue, t.HasQueue)
		row[9] = csvMs(t.Lag, t.HasLag)
		row[10] = csvMs(t.MaxGap, t.HasGap)
		row[11] = strconv.Itoa(len(r.Chunks))
		row[12] = strconv.Itoa(r.InputTokens)
		row[13] = strconv.Itoa(r.OutputTokens)
		row[14] = csvText(r.TokenSource)
		row[15] = csvText(r.Error)
		row[16], row[17], row[18] = csvCache(r)
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("write CSV row for request %q: %w", r.ID, err)
		}
		return nil
	})
	// Flush before reporting a read error, so the rows of every record read before the damage
	// (a truncated or corrupt records file) still reach the output.
	cw.Flush()
	if err != nil {
		return fmt.Errorf("CSV export after %d records: %w", n, err)
	}
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write CSV: %w", err)
	}
	return nil
}

// csvCache is r's prefix-cache cells: cached tokens, their fraction of the prompt and their
// source, or three empty cells when the server reported none.
func csvCache(r *metrics.Record) (cached, fraction, source string) {
	if r.CacheSource == "" {
		return "", "", ""
	}
	in := int64(max(r.InputTokens, 0))
	c := min(int64(max(r.CachedInputTokens, 0)), in)
	if in > 0 {
		fraction = strconv.FormatFloat(float64(c)/float64(in), 'f', 4, 64)
	}
	return strconv.FormatInt(c, 10), fraction, csvText(r.CacheSource)
}

// phaseName spells the steady phase out so the column is never ambiguous.
func phaseName(p string) string {
	if p == metrics.PhaseSteady {
		return "steady"
	}
	return p
}

func csvMs(v float64, ok bool) string {
	if !ok {
		return ""
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// csvText neutralizes cells a spreadsheet would evaluate as a formula.
func csvText(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}
