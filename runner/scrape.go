package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmbench/llmbench/internal/redact"
	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/reports"
)

// ServerSample is one poll of an endpoint's Prometheus /metrics. A field is NaN-free: a
// metric the server does not export is reported as -1.
type ServerSample struct {
	T           float64 `json:"t"` // seconds from the run epoch (negative: polled before it), scaled by the time scale
	Running     float64 `json:"running"`
	Waiting     float64 `json:"waiting"`
	KVUsage     float64 `json:"kv_cache_usage"` // 0..1
	Preemptions float64 `json:"preemptions_total"`
	// PrefixHits and PrefixQueries are the prefix-cache counters (cumulative, in tokens) named
	// by ServerSamples.PrefixSource (scrape_prefix.go); -1 when not exported.
	PrefixHits    float64 `json:"prefix_cache_hits"`
	PrefixQueries float64 `json:"prefix_cache_queries"`

	// GPUs are the DCGM power readings of the scrape, one per GPU series (issue 39;
	// scrape_energy.go); absent when the endpoint exports none.
	GPUs []GPUReading `json:"gpus,omitempty"`
	// Speculative decoding counters (cumulative, scrape_spec.go); -1 when not exported. Absent
	// in files written before they existed (then read as 0 by older readers' zero values).
	SpecDrafts      float64 `json:"spec_drafts"`
	SpecDraftTokens float64 `json:"spec_draft_tokens"`
	SpecAccepted    float64 `json:"spec_accepted_tokens"`
}

// ServerSamples is what server-metrics.json holds.
type ServerSamples struct {
	Endpoint string         `json:"endpoint"`
	Samples  []ServerSample `json:"samples"`
	Errors   int            `json:"errors"`
	// LastError is the last scrape failure, if any, redacted like Endpoint.
	LastError string `json:"last_error,omitempty"`
	// Backend is the server family its metric names show ("vllm", "sglang", "tgi",
	// "llamacpp"); PrefixSource names the prefix-cache counters read ("hits / queries") and
	// PrefixGauge a rolling hit-rate gauge the server exports instead, if any.
	Backend      string `json:"backend,omitempty"`
	PrefixSource string `json:"prefix_cache_source,omitempty"`
	PrefixGauge  string `json:"prefix_cache_gauge,omitempty"`
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
	eachSample(r, func(name, _ string, v float64) { out[name] += v })
	return out
}

// eachSample calls fn for every sample of the Prometheus text exposition r: its metric name,
// its label set as written (with the braces; "" without) and its value. Malformed lines and
// NaN values are skipped.
func eachSample(r io.Reader, fn func(name, labels string, v float64)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name := line
		rest, labels := "", ""
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
			labels = rest[:end+1]
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
		fn(name, labels, v)
	}
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
	at      []time.Time // when each sample was taken (monotonic)
	epoch   time.Time
	scale   float64
	redact  *redact.Policy
	stop    chan struct{}
	done    chan struct{}
	stopped sync.Once
}

// scrapeOptions configure a Scraper.
type scrapeOptions struct {
	// URL is the endpoint's base URL (with or without /v1, with its query, which is kept).
	URL string
	// APIKey, when set, is sent as a bearer token; Headers are sent too. Both, and the URL's
	// user info and query values, are redacted from what the scraper records.
	APIKey  string
	Headers map[string]string
	// Interval is the polling period (0 = 1 s).
	Interval time.Duration
	// TimeScale multiplies sample times, as record times are under --time-scale (0 = 1).
	TimeScale float64
	// Exact polls URL itself rather than its /metrics (a DCGM exporter's --power-metrics URL).
	Exact bool
}

// MetricsURL returns the /metrics URL of an endpoint base URL: its path without a trailing
// "/" or "/v1", plus "/metrics", and its query.
func MetricsURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	p := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
	u.Path, u.RawPath, u.Fragment = p+"/metrics", "", ""
	return u.String(), nil
}

// startScraper polls o.URL's /metrics once, then every interval until Stop or ctx ends.
// Sample times count from the scraper's start until SetEpoch names the run epoch.
func startScraper(ctx context.Context, o scrapeOptions) *scraper {
	interval := o.Interval
	if interval <= 0 {
		interval = time.Second
	}
	pol := redact.New(redact.Target{URL: o.URL, APIKey: o.APIKey, Headers: o.Headers})
	u, uerr := MetricsURL(o.URL)
	if o.Exact {
		u, uerr = exactURL(o.URL)
	}
	s := &scraper{stop: make(chan struct{}), done: make(chan struct{}), redact: pol, scale: o.TimeScale, epoch: time.Now(),
		data: ServerSamples{Endpoint: pol.URL(u)}}
	if s.scale <= 0 {
		s.scale = 1
	}
	// The poller never follows a redirect: the key and headers are for this host only.
	// A poll may take up to the interval, and at least a second (a loaded machine must not
	// fail short polls).
	client := &http.Client{Timeout: max(interval, time.Second), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	poll := func() {
		if uerr != nil {
			s.fail("endpoint URL: " + uerr.Error())
			return
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			s.fail(err.Error())
			return
		}
		for k, v := range o.Headers {
			req.Header.Set(k, v)
		}
		if o.APIKey != "" {
			req.Header.Set("Authorization", "Bearer "+o.APIKey)
		}
		resp, err := client.Do(req)
		if err != nil {
			s.fail(err.Error())
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			s.fail("GET /metrics: " + resp.Status)
			return
		}
		m, gpus := parseScrape(io.LimitReader(resp.Body, 8<<20))
		at := time.Now()
		kv := pick(m, "kv")
		smp := ServerSample{Running: pick(m, "running"), Waiting: pick(m, "waiting"), KVUsage: kv, Preemptions: pick(m, "preemptions")}
		pc := pickPrefix(m)
		smp.PrefixHits, smp.PrefixQueries = pc.hits, pc.queries
		smp.GPUs = gpus
		smp.SpecDrafts, smp.SpecDraftTokens, smp.SpecAccepted = pickSpec(m) // scrape_spec.go
		s.mu.Lock()
		pc.note(&s.data)
		s.data.Samples = append(s.data.Samples, smp)
		s.at = append(s.at, at)
		s.mu.Unlock()
	}
	// The first poll is done before returning, so that it precedes the run's first request:
	// it is the start of the counters' delta over the run (scrape_prefix.go).
	poll()
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.stop:
				if ctx.Err() == nil {
					poll() // a last scrape after the run's last completion (scrape_prefix.go)
				}
				return
			case <-t.C:
				poll()
			}
		}
	}()
	return s
}

// SetEpoch makes sample times count from the run epoch t (the records' time zero).
func (s *scraper) SetEpoch(t time.Time) {
	s.mu.Lock()
	s.epoch = t
	s.mu.Unlock()
}

func (s *scraper) fail(msg string) {
	msg = safetext.Escape(s.redact.String(msg), 512)
	s.mu.Lock()
	s.data.Errors++
	s.data.LastError = msg
	s.mu.Unlock()
}

// Stop ends polling, after one last poll unless the context ended, and waits for the poller
// to finish.
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
	for i := range d.Samples {
		d.Samples[i].T = s.at[i].Sub(s.epoch).Seconds() * s.scale
	}
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
