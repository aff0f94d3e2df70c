package reports

import (
	"bytes"
	"encoding/csv"
	"errors"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

func TestWriteCSV(t *testing.T) {
	const ms = int64(1e6)
	recs := []metrics.Record{
		{ID: "a", Class: "chat", Intended: 0, Dispatched: 1 * ms, Sent: 3 * ms, FirstToken: 100 * ms,
			Chunks: []metrics.Chunk{{T: 100 * ms, Tokens: 1}, {T: 120 * ms, Tokens: 2}, {T: 200 * ms, Tokens: 1}},
			End:    200 * ms, InputTokens: 10, OutputTokens: 4, TokenSource: "usage", Status: 200,
			CachedInputTokens: 8, CacheSource: metrics.CacheFromPromptDetails},
		{ID: "=HYPERLINK(\"x\")", Phase: metrics.PhaseWarmup, Intended: 5 * ms, Failure: metrics.FailDropped},
		{ID: "b", Intended: 6 * ms, Dispatched: 6 * ms, Sent: 6 * ms, End: 9 * ms, Failure: metrics.FailHTTP4xx, Status: 400,
			Error: "HTTP 400: the prompt has 5012 tokens, more than the 4096 of a slot"},
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, eachOf(recs)); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		CSVColumns(),
		{"a", "chat", "steady", "", "200", "100.000", "33.333", "200.000", "2.000", "1.000", "80.000", "3", "10", "4", "usage", "", "8", "0.8000", "prompt_tokens_details"},
		{"'=HYPERLINK(\"x\")", "", "warmup", "dropped", "", "", "", "", "", "", "", "0", "0", "0", "", "", "", "", ""},
		{"b", "", "steady", "http_4xx", "400", "", "", "3.000", "0.000", "0.000", "", "0", "0", "0", "",
			"HTTP 400: the prompt has 5012 tokens, more than the 4096 of a slot", "", "", ""},
	}
	if len(rows) != len(want) {
		t.Fatalf("got %d rows, want %d", len(rows), len(want))
	}
	for i := range want {
		if strings.Join(rows[i], ",") != strings.Join(want[i], ",") {
			t.Errorf("row %d:\n got %q\nwant %q", i, rows[i], want[i])
		}
	}
}

func TestWriteCSVKeepsRowsBeforeAnIterationError(t *testing.T) {
	boom := errors.New("records file is truncated")
	recs := fixtureRecords(3)
	var buf bytes.Buffer
	err := WriteCSV(&buf, func(fn func(*metrics.Record) error) error {
		for i := range recs {
			if err := fn(&recs[i]); err != nil {
				return err
			}
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want wrapped %v", err, boom)
	}
	rows, rerr := csv.NewReader(&buf).ReadAll()
	if rerr != nil || len(rows) != 4 {
		t.Fatalf("got %d CSV lines (%v), want the header and 3 rows read before the error", len(rows), rerr)
	}
}
