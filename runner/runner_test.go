package runner

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

func TestOrderInterleaves(t *testing.T) {
	if got, want := Order(3), []int{0, 1, 1, 0, 0, 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Order(3) = %v, want %v (A B, B A, A B)", got, want)
	}
}

func TestTileShiftsAndRenames(t *testing.T) {
	reqs := []traces.Request{
		{ID: "a", Arrival: 0, Session: "s"},
		{ID: "b", Arrival: 2 * time.Second},
		{ID: "c", Arrival: 4 * time.Second},
	}
	out := Tile(reqs, 3)
	if len(out) != 9 {
		t.Fatalf("%d requests", len(out))
	}
	// period = span 4 s + mean gap 2 s
	if out[3].ID != "a~1" || out[3].Arrival != 6*time.Second || out[3].Session != "s~1" {
		t.Fatalf("copy 1 starts with %+v", out[3])
	}
	if out[8].ID != "c~2" || out[8].Arrival != 16*time.Second {
		t.Fatalf("last request %+v", out[8])
	}
	if reqs[0].ID != "a" {
		t.Fatal("Tile changed its input")
	}
	if got := Tile(reqs, 1); len(got) != 3 {
		t.Fatal("one copy must be the trace itself")
	}
	// 6 s per copy at rate scale 1: 30 s needs 5 copies; at rate scale 2 (3 s per copy), 10.
	if n := copiesFor(traces.FromSlice(reqs), 30*time.Second, 1); n != 5 {
		t.Fatalf("copiesFor = %d, want 5", n)
	}
	if n := copiesFor(traces.FromSlice(reqs), 30*time.Second, 2); n != 10 {
		t.Fatalf("copiesFor at 2x = %d, want 10", n)
	}
}

func TestDiffConfig(t *testing.T) {
	d := DiffConfig(map[string]string{"gpu": "h100", "tp": "1", "model": "m"}, map[string]string{"gpu": "h200", "tp": "1", "extra": "x"})
	want := []ConfigDiff{{Key: "extra", A: "", B: "x"}, {Key: "gpu", A: "h100", B: "h200"}, {Key: "model", A: "m", B: ""}}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("%+v", d)
	}
}

func TestScaleRecordTimesKeepsLagInWallTime(t *testing.T) {
	r := metrics.Record{Intended: 100, Dispatched: 103, Sent: 110, Headers: 120, FirstToken: 150, End: 200,
		Chunks: []metrics.Chunk{{T: 150, Tokens: 1}, {T: 170, Tokens: 2}}}
	scaleRecordTimes(&r, 10)
	if r.Intended != 1000 || r.Dispatched != 1003 || r.Sent != 1100 || r.FirstToken != 1500 || r.End != 2000 || r.Chunks[1].T != 1700 {
		t.Fatalf("%+v", r)
	}
	var unsent metrics.Record
	unsent.Intended = 5
	scaleRecordTimes(&unsent, 10)
	if unsent.Dispatched != 0 || unsent.Sent != 0 {
		t.Fatalf("times that did not happen must stay 0: %+v", unsent)
	}
}

func TestParsePrometheus(t *testing.T) {
	text := `# HELP vllm:num_requests_running Number of requests running.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m",engine="0"} 3
vllm:num_requests_running{model_name="m",engine="1"} 2
vllm:kv_cache_usage_perc{model_name="a \"quoted} name"} 0.25
vllm:num_preemptions_total 7 1700000000000
garbage line without value
bad_value{x="1"} notanumber
`
	m := parsePrometheus(strings.NewReader(text))
	if m["vllm:num_requests_running"] != 5 || m["vllm:kv_cache_usage_perc"] != 0.25 || m["vllm:num_preemptions_total"] != 7 {
		t.Fatalf("%v", m)
	}
	if _, ok := m["bad_value"]; ok {
		t.Fatal("non-numeric value accepted")
	}
	if pick(m, "waiting") != -1 || pick(m, "running") != 5 {
		t.Fatal("pick")
	}
}

func FuzzParsePrometheus(f *testing.F) {
	f.Add("vllm:num_requests_running{a=\"b\"} 1\n")
	f.Add("x{a=\"\\\"}\"} 2 3\n# c\n")
	f.Add("{}} 1")
	f.Add("vllm:prefix_cache_hits_total{engine=\"0\"} 3\nvllm:prefix_cache_queries_total{engine=\"0\"} 8\n")
	f.Add("sglang:cached_tokens_total{cache_source=\"device\"} 1e3\nsglang:prompt_tokens_total 2e3\nsglang:cache_hit_rate 0.5\n")
	f.Add("vllm:gpu_prefix_cache_hits_total -Inf\nvllm:gpu_prefix_cache_queries_total +Inf\n")
	f.Fuzz(func(t *testing.T, s string) {
		m := parsePrometheus(strings.NewReader(s))
		for k, v := range m {
			if k == "" || v != v {
				t.Fatalf("bad entry %q=%v", k, v)
			}
		}
		// The prefix-cache counters of two such scrapes make a delta that encodes as JSON.
		p := pickPrefix(m)
		d := ServerSamples{Samples: []ServerSample{{T: -1, PrefixHits: 0, PrefixQueries: 0}, {T: 1, PrefixHits: p.hits, PrefixQueries: p.queries}}}
		p.note(&d)
		if _, err := json.Marshal(serverPrefixCache(d, 0, 0)); err != nil {
			t.Fatalf("summary block does not encode: %v", err)
		}
	})
}

func TestScraperCollectsSamples(t *testing.T) {
	polls := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		w.Write([]byte("vllm:num_requests_running 4\nvllm:num_requests_waiting 1\nvllm:kv_cache_usage_perc 0.5\n"))
		select {
		case polls <- struct{}{}:
		default:
		}
	}))
	defer srv.Close()
	s := startScraper(context.Background(), scrapeOptions{URL: srv.URL + "/v1", APIKey: "k", Interval: 10 * time.Millisecond})
	<-polls // the first poll happens at once
	<-polls
	s.Stop()
	d := s.Data()
	if len(d.Samples) < 2 || d.Samples[0].Running != 4 || d.Samples[0].Waiting != 1 || d.Samples[0].KVUsage != 0.5 || d.Samples[0].Preemptions != -1 {
		t.Fatalf("%+v", d)
	}
	series := toReportSeries(&d)
	if series.Preemptions != nil || len(series.Running) != len(series.T) {
		t.Fatalf("report series %+v", series)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.json")
	if err := WriteFileAtomic(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(p, []byte("two")); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	entries, _ := os.ReadDir(dir)
	if string(data) != "two" || len(entries) != 1 {
		t.Fatalf("content %q, %d files (temporary file left?)", data, len(entries))
	}
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "x"), nil); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

// TestExecuteWritesEveryRecordAndSummary runs a fake producer and checks the results
// directory, including a producer error that still leaves readable records.
func TestExecuteWritesEveryRecordAndSummary(t *testing.T) {
	reqs := []traces.Request{{ID: "a", InputTokens: 3, OutputTokens: 2}, {ID: "b", Arrival: time.Second, InputTokens: 3, OutputTokens: 2}}
	prod := func(_ context.Context, src traces.Source, sink func(*metrics.Record)) (*Produced, error) {
		rs, _ := src.Requests()
		for i, r := range rs {
			t0 := int64(r.Arrival)
			rec := &metrics.Record{ID: r.ID, Intended: t0, Dispatched: t0, Sent: t0 + 1, Headers: t0 + 2, FirstToken: t0 + 1e6,
				Chunks: []metrics.Chunk{{T: t0 + 1e6, Tokens: 1}, {T: t0 + 2e6, Tokens: 1}}, End: t0 + 2e6,
				InputTokens: 3, OutputTokens: 2, RequestedTokens: 2, TokenSource: metrics.TokensFromUsage, Status: 200}
			if i == 1 {
				rec.Failure, rec.Status = metrics.FailHTTP5xx, 503
			}
			sink(rec)
		}
		return &Produced{Model: "m", Skipped: 3, LateStart: 340 * time.Millisecond, CPUStealFraction: 0.08}, nil
	}
	dir := filepath.Join(t.TempDir(), "out")
	res, err := Execute(context.Background(), Options{Requests: reqs, OutDir: dir, Info: metrics.RunInfo{Mode: "open-loop"}}, prod)
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 2 || res.Summary.Requests.Total != 2 || res.Summary.Requests.Failures["http_5xx"] != 1 || res.Summary.Run.Model != "m" {
		t.Fatalf("%+v %+v", res, res.Summary.Requests)
	}
	if w := strings.Join(res.Summary.Warnings, "\n"); !strings.Contains(w, "3 of the trace's requests were outside the run") || !strings.Contains(w, "ready 340ms after the run's start time (--start-at)") ||
		!strings.Contains(w, "host: the hypervisor gave 8.0%") || res.Summary.Client.CPUStealFraction != 0.08 {
		t.Fatalf("warnings %v, client %+v", res.Summary.Warnings, res.Summary.Client)
	}
	for _, f := range []string{SummaryFile, RecordsFile, ReportFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := ReadSummary(dir)
	if err != nil || s.Schema != metrics.SummarySchema {
		t.Fatalf("ReadSummary: %v", err)
	}

	boom := errors.New("boom")
	failing := func(_ context.Context, _ traces.Source, sink func(*metrics.Record)) (*Produced, error) {
		sink(&metrics.Record{ID: "a"})
		return nil, boom
	}
	dir2 := filepath.Join(t.TempDir(), "out2")
	if _, err := Execute(context.Background(), Options{Requests: reqs, OutDir: dir2}, failing); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	recs, err := metrics.ReadRecords(filepath.Join(dir2, RecordsFile))
	if err != nil || len(recs) != 1 {
		t.Fatalf("records after a producer error: %d, %v", len(recs), err)
	}
}

// TestExecuteKeepsResultsWhenTheTraceFailsMidRun: a producer that stops early because the
// trace could not be read again still leaves a summary and a report, warns, and fails.
func TestExecuteKeepsResultsWhenTheTraceFailsMidRun(t *testing.T) {
	reqs := []traces.Request{{ID: "a", InputTokens: 3, OutputTokens: 1}, {ID: "b", Arrival: time.Second, InputTokens: 3, OutputTokens: 1}}
	gone := errors.New("read trace again: the trace file changed since the run started")
	prod := func(_ context.Context, _ traces.Source, sink func(*metrics.Record)) (*Produced, error) {
		sink(&metrics.Record{ID: "a", Sent: 1, Headers: 2, FirstToken: 1e6, End: 1e6, Chunks: []metrics.Chunk{{T: 1e6, Tokens: 1}},
			InputTokens: 3, OutputTokens: 1, RequestedTokens: 1, Status: 200})
		return &Produced{Model: "m", Err: gone}, nil
	}
	dir := filepath.Join(t.TempDir(), "out")
	res, err := Execute(context.Background(), Options{Requests: reqs, OutDir: dir}, prod)
	if !errors.Is(err, gone) {
		t.Fatalf("err = %v, want the trace error", err)
	}
	if res == nil || res.Summary == nil || res.Records != 1 {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(strings.Join(res.Summary.Warnings, "\n"), "the run ended early: read trace again") {
		t.Errorf("warnings %v", res.Summary.Warnings)
	}
	for _, f := range []string{SummaryFile, RecordsFile, ReportFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}
