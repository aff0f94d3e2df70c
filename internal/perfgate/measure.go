package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// measurement is what one invocation of one build yields: its figures and the host facts
// that say how noisy the machine was meanwhile.
type measurement struct {
	Values map[string]float64 `json:"values"`
	// Steal is the CPU steal fraction the bench read over the invocation (-1: unknown or not
	// a bench); WakeFloorMs the long-streams point's wake floor P99 (-1: none); Load the
	// highest 1-minute load average the bench saw, Cores the machine's CPUs.
	Steal       float64 `json:"cpu_steal_fraction"`
	WakeFloorMs float64 `json:"wake_floor_p99_ms"`
	Load        float64 `json:"load_average_1m"`
	Cores       int     `json:"cores"`
	// WallS, CPUS and MaxRSSMB are the child process's wall time, CPU time (user and
	// system) and peak resident memory (its rusage's ru_maxrss).
	WallS    float64 `json:"wall_s"`
	CPUS     float64 `json:"cpu_s"`
	MaxRSSMB float64 `json:"max_rss_mb"`
	// Note says what in the invocation's own output qualifies its figures (failed streams).
	Note string `json:"note,omitempty"`
}

// benchJSON is what the gate reads of `llmbench bench --json`; the keys are the same in the
// baseline e69c572 and today (internal/selfbench.Figures).
type benchJSON struct {
	DispatchReqPerS   *float64   `json:"dispatch_req_per_s"`
	IngestTokensPerS  *float64   `json:"ingest_tokens_per_s"`
	ArrivalErrorP99Ms *float64   `json:"arrival_error_p99_ms"`
	Cores             int        `json:"cores"`
	LoadAverage       [2]float64 `json:"load_average_1m"`
	CPUStealFraction  float64    `json:"cpu_steal_fraction"`
}

// longJSON is what the gate reads of `llmbench bench --scenario long-streams --json`
// (internal/selfbench.LongFigures), the same keys in e69c572.
type longJSON struct {
	Points []struct {
		Streams           int      `json:"streams"`
		Skipped           string   `json:"skipped"`
		Failed            int      `json:"failed"`
		LagP99Ms          *float64 `json:"lag_p99_ms"`
		ArrivalErrorP99Ms *float64 `json:"arrival_error_p99_ms"`
		RSSPerStreamKB    *float64 `json:"rss_per_stream_kb"`
		WakeFloorP99Ms    float64  `json:"wake_floor_p99_ms"`
		CPUStealFraction  float64  `json:"cpu_steal_fraction"`
	} `json:"points"`
	Cores       int        `json:"cores"`
	LoadAverage [2]float64 `json:"load_average_1m"`
}

// usage is what a finished child cost.
type usage struct{ wall, cpu, rss float64 }

// invoke runs bin with args, its stdout captured, and returns it with the child's wall time,
// CPU time and peak RSS. A failure quotes the end of the child's stderr.
func invoke(ctx context.Context, timeout time.Duration, bin string, args ...string) ([]byte, usage, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0).Seconds()
	if ctx.Err() == context.DeadlineExceeded {
		return nil, usage{}, fmt.Errorf("%s %s: still running after %s, stopped", filepath.Base(bin), strings.Join(args, " "), timeout)
	}
	if err != nil {
		return nil, usage{}, fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(args, " "), err, tail(stderr.String(), 20))
	}
	ps := cmd.ProcessState
	return stdout.Bytes(), usage{wall: wall, cpu: (ps.UserTime() + ps.SystemTime()).Seconds(), rss: maxRSSMB(ps)}, nil
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// measureBench runs the client bench once (--runs 1 unless extra says otherwise).
func measureBench(ctx context.Context, o *options, bin string) (measurement, error) {
	args := append([]string{"bench", "--json", "--runs", "1"}, o.benchArgs...)
	out, u, err := invoke(ctx, o.timeout, bin, args...)
	if err != nil {
		return measurement{}, err
	}
	var b benchJSON
	if err := json.Unmarshal(out, &b); err != nil {
		return measurement{}, fmt.Errorf("%s bench --json: %w", filepath.Base(bin), err)
	}
	values, err := figureValues(bin+" bench --json", map[string]*float64{
		"dispatch_req_per_s":   b.DispatchReqPerS,
		"ingest_tokens_per_s":  b.IngestTokensPerS,
		"arrival_error_p99_ms": b.ArrivalErrorP99Ms,
	})
	if err != nil {
		return measurement{}, err
	}
	return measurement{
		Values: values,
		Steal:  b.CPUStealFraction, WakeFloorMs: -1, Load: max(b.LoadAverage[0], b.LoadAverage[1]), Cores: b.Cores,
		WallS: u.wall, CPUS: u.cpu, MaxRSSMB: u.rss,
	}, nil
}

// figureValues takes the figures a build printed, refusing one it left out: the gate compares
// a key both builds report, never a missing one read as 0. The names are the gate's, each
// from the JSON key the figure table documents.
func figureValues(what string, v map[string]*float64) (map[string]float64, error) {
	out := make(map[string]float64, len(v))
	for name, p := range v {
		if p == nil {
			return nil, fmt.Errorf("%s: no %s in its output: this build does not report it (leave its kind out with -kinds)", what, strings.TrimPrefix(name, "long_"))
		}
		out[name] = *p
	}
	return out, nil
}

// measureLong runs one point of the long-streams scenario.
func measureLong(ctx context.Context, o *options, bin string) (measurement, error) {
	args := []string{"bench", "--scenario", "long-streams", "--json", "--in-flight", strconv.Itoa(o.longInFlight), "--window", o.longWindow.String()}
	out, u, err := invoke(ctx, o.timeout, bin, args...)
	if err != nil {
		return measurement{}, err
	}
	var l longJSON
	if err := json.Unmarshal(out, &l); err != nil {
		return measurement{}, fmt.Errorf("%s bench --scenario long-streams --json: %w", filepath.Base(bin), err)
	}
	if len(l.Points) != 1 {
		return measurement{}, fmt.Errorf("%s bench --scenario long-streams: %d points, want 1", filepath.Base(bin), len(l.Points))
	}
	p := l.Points[0]
	if p.Skipped != "" {
		return measurement{}, fmt.Errorf("%s bench --scenario long-streams: the point of %d streams was skipped: %s", filepath.Base(bin), p.Streams, p.Skipped)
	}
	values, err := figureValues(bin+" bench --scenario long-streams --json", map[string]*float64{
		"long_lag_p99_ms":           p.LagP99Ms,
		"long_arrival_error_p99_ms": p.ArrivalErrorP99Ms,
		"long_rss_per_stream_kb":    p.RSSPerStreamKB,
	})
	if err != nil {
		return measurement{}, err
	}
	m := measurement{
		Values: values,
		Steal:  p.CPUStealFraction, WakeFloorMs: p.WakeFloorP99Ms, Load: max(l.LoadAverage[0], l.LoadAverage[1]), Cores: l.Cores,
		WallS: u.wall, CPUS: u.cpu, MaxRSSMB: u.rss,
	}
	if p.Failed > 0 {
		m.Note = fmt.Sprintf("%d of %d streams failed", p.Failed, p.Streams)
	}
	return m, nil
}

// measureSim runs simulate of the overload trace into a directory of its own, removed after:
// the figures are the child's wall time and peak RSS. Its progress display is off because
// stderr is not a terminal (the baseline refuses simulate's --no-progress).
func measureSim(ctx context.Context, o *options, bin string) (measurement, error) {
	dir, err := os.MkdirTemp(o.workDir, "sim-")
	if err != nil {
		return measurement{}, err
	}
	defer os.RemoveAll(dir)
	args := []string{"simulate", "--trace", o.trace, "--gpu", "h200", "--tp", "2", "-o", filepath.Join(dir, "out")}
	_, u, err := invoke(ctx, o.timeout, bin, args...)
	if err != nil {
		return measurement{}, err
	}
	if u.rss <= 0 {
		return measurement{}, fmt.Errorf("%s simulate: the child's peak RSS is unknown on this system", filepath.Base(bin))
	}
	return measurement{
		Values: map[string]float64{"sim_wall_s": u.wall, "sim_peak_rss_mb": u.rss},
		Steal:  -1, WakeFloorMs: -1, Load: -1,
		WallS: u.wall, CPUS: u.cpu, MaxRSSMB: u.rss,
	}, nil
}

// ensureTrace makes the overload trace with the baseline's gen when it is not there yet
// (the issue's `gen --preset chat --rate 200 --duration 5001s --max-requests 1000000`, scaled
// to o.simRequests at the same rate): written beside the file and renamed, so a trace that
// exists is whole.
func ensureTrace(ctx context.Context, o *options) error {
	if _, err := os.Stat(o.trace); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(o.trace), 0o755); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.tmp%d.jsonl", strings.TrimSuffix(o.trace, ".jsonl"), os.Getpid())
	defer os.Remove(tmp)
	dur := fmt.Sprintf("%ds", o.simRequests/simRate+1)
	if _, _, err := invoke(ctx, o.timeout, o.base, "gen", "--preset", "chat", "--rate", strconv.Itoa(simRate), "--duration", dur,
		"--max-requests", strconv.Itoa(o.simRequests), "--seed", "1", "-o", tmp); err != nil {
		return fmt.Errorf("making the overload trace: %w", err)
	}
	return os.Rename(tmp, o.trace)
}

// simRate is the overload trace's arrival rate (req/s): about ten times what the simulated
// two H200s serve (the 1M-request figure).
const simRate = 200

// traceName is the overload trace's file name for n requests.
func traceName(n int) string { return fmt.Sprintf("chat-rate%d-%d.jsonl", simRate, n) }
