package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/llmbench/llmbench/metrics"
)

// ClockPath is the llmbench time endpoint: GET answers {"unix_nano": N}, the server's wall
// clock when it handled the request. `llmbench serve` serves it beside the engine's API.
const ClockPath = "/llmbench/time"

// ClockHandler serves ClockPath from now (time.Now when nil).
func ClockHandler(now func() time.Time) http.Handler {
	if now == nil {
		now = time.Now
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		t := now().UnixNano()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprintf(w, "{\"unix_nano\":%d}\n", t)
	})
}

// WithClock serves ClockPath from now and everything else from h.
func WithClock(h http.Handler, now func() time.Time) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(ClockPath, ClockHandler(now))
	mux.Handle("/", h)
	return mux
}

// ClockSamples is how many round trips MeasureClock makes.
const ClockSamples = 16

// MeasureClock measures the offset of the local clock (now) against the time endpoint at
// base (a server's base URL; ClockPath is appended) by round trips, NTP's method without the
// protocol: for each sample it reads the local clock before (t0) and after (t1) a GET and the
// server's time ts in between, so the true offset lies in [ts−t1, ts−t0]. The sample with the
// shortest round trip wins: offset = ts − (t0+t1)/2, bound = (t1−t0)/2 (the server's clock
// is read within the round trip; its own resolution, 1 ns here, is added). A first request
// warms the connection and is not counted.
func MeasureClock(ctx context.Context, client *http.Client, base string, now func() time.Time, samples int) (metrics.Clock, error) {
	if now == nil {
		now = time.Now
	}
	if samples < 1 {
		samples = ClockSamples
	}
	url := strings.TrimSuffix(base, "/") + ClockPath
	c := metrics.Clock{Method: "round-trip", Reference: url, BoundNs: -1}
	get := func() (int64, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("%s: HTTP %d (is it a llmbench time endpoint? `llmbench serve` serves one)", url, resp.StatusCode)
		}
		ts, ok := parseClockAnswer(body)
		if !ok {
			return 0, fmt.Errorf("%s: not a llmbench time answer: %.80q", url, body)
		}
		return ts, nil
	}
	if _, err := get(); err != nil {
		return c, err
	}
	best := int64(-1)
	for range samples {
		t0 := now()
		ts, err := get()
		t1 := now()
		if err != nil {
			return c, err
		}
		rtt := t1.Sub(t0).Nanoseconds()
		if best >= 0 && rtt >= best {
			continue
		}
		best = rtt
		mid := t0.UnixNano() + rtt/2
		c.OffsetNs = ts - mid
		c.BoundNs = rtt - rtt/2 + 1
	}
	c.Samples = samples
	return c, nil
}

// ServeClock serves only the time endpoint on addr until ctx is done or stop fires
// (llmbench clock: the clock reference of shards whose target serves none). ready, when set,
// is called with the address it listens on.
func ServeClock(ctx context.Context, addr string, stop <-chan os.Signal, ready func(addr string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle(ClockPath, ClockHandler(nil))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case <-ctx.Done():
	case <-stop:
	case err := <-done:
		return fmt.Errorf("clock: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("clock: %w", err)
	}
	return nil
}

// parseClockAnswer reads {"unix_nano": N}.
func parseClockAnswer(body []byte) (int64, bool) {
	var v struct {
		UnixNano *int64 `json:"unix_nano"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.UnixNano == nil {
		return 0, false
	}
	return *v.UnixNano, true
}
