package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmbench/llmbench/reports"
)

// ServerSample is one poll of an endpoint's Prometheus /metrics. A field is NaN-free: a
// metric the server does not export is reported as -1.
type ServerSample struct {
	T           float64 `json:"t"` // seconds since the scrape started
	Running     float64 `json:"running"`
	Waiting     float64 `json:"waiting"`
	KVUsage     float64 `json:"kv_cache_usage"` // 0..1
	Preemptions float64 `json:"preemptions_total"`
}

// ServerSamples is what server-metrics.json holds.
type ServerSamples struct {
	Endpoint string         `json:"endpoint"`
	Samples  []ServerSample `json:"samples"`
	Errors   int            `json:"errors"`
	// LastError is the last scrape failure, if any (no secrets: the URL has none).
	LastError string `json:"last_error,omitempty"`
}

// metric names per field, in preference order: vLLM (v1 and older), SGLang
// (python/sglang/srt/metrics/collector.py), TGI (router/src/server.rs, tgi_* gauges) and
// llama.cpp server with --metrics (tools/server/README.md, "GET /metrics":
// requests_processing and requests_deferred; kv_cache_usage_ratio only in older builds).
// Ollama exports no Prometheus metrics.
var scrapeNames = map[string][]string{
	"running":     {"vllm:num_requests_running", "sglang:num_running_reqs", "tgi_batch_current_size", "llamacpp:requests_processing"},
	"waiting":     {"vllm:num_requests_waiting", "sglang:num_queue_reqs", "tgi_queue_size", "llamacpp:requests_deferred"},
	"kv":          {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage", "llamacpp:kv_cache_usage_ratio"},
	"preemptions": {"vllm:num_preemptions_total", "vllm:num_preemptions", "sglang:num_retracted_reqs"},
}

// parsePrometheus reads the Prometheus text exposition format and returns, for each metric
// name, the sum of its samples over all label sets (histogram and summary series keep their
// suffixed names). Malformed lines are skipped; it never fails on content.
func parsePrometheus(r io.Reader) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name := line
		rest := ""
		if i := strings.IndexAny(line, "{ \t"); i >= 0 {
			name = line[:i]
			rest = line[i:]
		} else {
			continue
		}
		if strings.HasPrefix(rest, "{") {
			end := labelEnd(rest)
			if end < 0 {
				continue
			}
			rest = rest[end+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 || name == "" {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil || v != v { // skip NaN
			continue
		}
		out[name] += v
	}
	return out
}

// labelEnd finds the closing brace of a label set, honouring quoted values with escapes.
func labelEnd(s string) int {
	inQuote := false
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == '}':
			return i
		}
	}
	return -1
}

func pick(m map[string]float64, key string) float64 {
	for _, n := range scrapeNames[key] {
		if v, ok := m[n]; ok {
			return v
		}
	}
	return -1
}

// scraper polls an endpoint's /metrics during a run.
type scraper struct {
	mu      sync.Mutex
	data    ServerSamples
	stop    chan struct{}
	done    chan struct{}
	stopped sync.Once
}

// startScraper polls baseURL's /metrics every interval (default 1 s) until Stop or ctx ends.
// apiKey, when set, is sent as a bearer token.
func startScraper(ctx context.Context, baseURL, apiKey string, interval time.Duration) *scraper {
	if interval <= 0 {
		interval = time.Second
	}
	u := strings.TrimSuffix(strings.TrimSuffix(baseURL, "/"), "/v1") + "/metrics"
	s := &scraper{stop: make(chan struct{}), done: make(chan struct{}), data: ServerSamples{Endpoint: u}}
	client := &http.Client{Timeout: interval}
	start := time.Now()
	poll := func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			s.fail(err.Error())
			return
		}
		if apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+apiKey)
		}
		resp, err := client.Do(req)
		if err != nil {
			s.fail(strings.ReplaceAll(err.Error(), apiKey, "<redacted>"))
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			s.fail("GET /metrics: " + resp.Status)
			return
		}
		m := parsePrometheus(io.LimitReader(resp.Body, 8<<20))
		kv := pick(m, "kv")
		smp := ServerSample{T: time.Since(start).Seconds(), Running: pick(m, "running"), Waiting: pick(m, "waiting"), KVUsage: kv, Preemptions: pick(m, "preemptions")}
		s.mu.Lock()
		s.data.Samples = append(s.data.Samples, smp)
		s.mu.Unlock()
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		poll()
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.stop:
				return
			case <-t.C:
				poll()
			}
		}
	}()
	return s
}

func (s *scraper) fail(msg string) {
	s.mu.Lock()
	s.data.Errors++
	s.data.LastError = msg
	s.mu.Unlock()
}

// Stop ends polling and waits for the poller to finish.
func (s *scraper) Stop() {
	s.stopped.Do(func() { close(s.stop) })
	<-s.done
}

// Latest returns the most recent sample (false before the first).
func (s *scraper) Latest() (ServerSample, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.data.Samples); n > 0 {
		return s.data.Samples[n-1], true
	}
	return ServerSample{}, false
}

// Data returns a copy of what was scraped.
func (s *scraper) Data() ServerSamples {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.data
	d.Samples = append([]ServerSample(nil), s.data.Samples...)
	return d
}

func readServerSamples(path string) (*ServerSamples, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s ServerSamples
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// toReportSeries converts scraped samples to the report's series; metrics the server did not
// export (-1) are left out.
func toReportSeries(s *ServerSamples) *reports.ServerSeries {
	if s == nil || len(s.Samples) == 0 {
		return nil
	}
	out := &reports.ServerSeries{Source: s.Endpoint}
	col := func(get func(ServerSample) float64) []float64 {
		vals := make([]float64, len(s.Samples))
		for i, smp := range s.Samples {
			v := get(smp)
			if v < 0 {
				return nil
			}
			vals[i] = v
		}
		return vals
	}
	for _, smp := range s.Samples {
		out.T = append(out.T, smp.T)
	}
	out.Running = col(func(x ServerSample) float64 { return x.Running })
	out.Waiting = col(func(x ServerSample) float64 { return x.Waiting })
	out.KVCacheUsage = col(func(x ServerSample) float64 { return x.KVUsage })
	out.Preemptions = col(func(x ServerSample) float64 { return x.Preemptions })
	return out
}
