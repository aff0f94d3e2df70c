package usecase

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/llmbench/llmbench/internal/selfbench"
	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/runner"
)

// longBenchFigures is the JSON output of bench --scenario long-streams.
type longBenchFigures struct {
	*selfbench.LongFigures
	CPUModel    string     `json:"cpu_model"`
	Cores       int        `json:"cores"`
	GOMAXPROCS  int        `json:"gomaxprocs"`
	GoVersion   string     `json:"go_version"`
	FDLimit     uint64     `json:"fd_limit"`
	LoadAverage [2]float64 `json:"load_average_1m"`
}

// long runs --scenario long-streams.
func (o *BenchOptions) long(ctx context.Context, env *Env) (int, error) {
	lo := o.Long
	if !o.Changed.Has("token-gap") {
		lo.Gap = 100 * time.Millisecond
	} else {
		lo.Gap = o.Client.TokenGap
	}
	if lo.Gap <= 0 || lo.Window <= 0 || lo.RampRate <= 0 || len(lo.InFlight) == 0 {
		return ExitBadInput, fmt.Errorf("--token-gap, --window and --ramp-rate must be > 0, and --in-flight must name at least one number")
	}
	for _, n := range lo.InFlight {
		if n < 1 {
			return ExitBadInput, fmt.Errorf("--in-flight %d: every number of streams must be > 0", n)
		}
	}
	if o.SourceAddrs != "" {
		addrs, err := loadgen.ParseSourceAddrs(o.SourceAddrs)
		if err != nil {
			return ExitBadInput, fmt.Errorf("--source-addrs: %w", err)
		}
		lo.SourceAddrs = addrs
	}
	lo.Runs = 1
	if o.Changed.Has("runs") {
		if o.Client.Runs < 1 {
			return ExitBadInput, fmt.Errorf("--runs %d: must be > 0", o.Client.Runs)
		}
		lo.Runs = o.Client.Runs
	}
	lo.RSS, lo.FDLimit = runner.ProcessRSS, runner.FDLimit()
	if !o.JSON && env.ShowProgress {
		lo.Log = env.Stderr
	}
	ctx, cancel := env.cancelOnInterrupt(ctx)
	defer cancel()
	load0 := runner.LoadAverage()
	f, err := selfbench.RunLong(ctx, lo)
	if err != nil {
		return ExitBadInput, fmt.Errorf("bench: %w", err)
	}
	h := runner.HostFacts()
	out := longBenchFigures{LongFigures: f, CPUModel: h.CPUModel, Cores: h.CPUs, GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: h.GoVersion,
		FDLimit: lo.FDLimit, LoadAverage: [2]float64{load0, runner.LoadAverage()}}
	if o.JSON {
		return exitOf(writeJSON(env.Stdout, out))
	}
	return exitOf(printLongBench(env.Stdout, &out))
}

func printLongBench(w io.Writer, f *longBenchFigures) error {
	proto := "HTTP/1.1"
	if f.HTTP2 {
		proto = "HTTP/2 (h2c)"
	}
	fmt.Fprintf(w, "machine: %s, %d cores (GOMAXPROCS %d), %s, open files limit %d\n", f.CPUModel, f.Cores, f.GOMAXPROCS, f.GoVersion, f.FDLimit)
	runs := ""
	if f.Runs > 1 {
		runs = fmt.Sprintf("; medians of %d runs", f.Runs)
	}
	fmt.Fprintf(w, "long streams over %s: a token every %.0f ms, all open for %.1f s, started at %.0f per second%s\n\n", proto, f.GapMs, f.WindowS, f.RampRate, runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "streams\tpeak_open\tfailed\tconnections\ttok/s\tlag_p99_ms\tarrival_error_p99_ms\trss_mb\trss_per_stream_kb\tgo_per_stream_kb\tcpu\twake_floor_p99_ms\tsteal\t")
	steal := -1.0
	for _, p := range f.Points {
		if p.Skipped != "" {
			fmt.Fprintf(tw, "%d\t\tskipped: %s\t\t\t\t\t\t\t\t\t\n", p.Streams, p.Skipped)
			continue
		}
		failed := fmt.Sprint(p.Failed)
		if p.Failed > 0 {
			failed += fmt.Sprint(" ", p.Failures)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%.0f\t%.3f\t%.3f\t%.0f\t%.1f\t%.1f\t%.2f\t%.3f\t%s\t\n", p.Streams, p.PeakOpen, failed, p.Connections, p.TokensPerS,
			p.LagP99Ms, p.ArrivalErrorP99Ms, p.RSSMB, p.RSSPerStreamKB, p.GoPerStreamKB, p.ClientCPUFraction, p.WakeFloorP99Ms, selfbench.Percent(p.CPUStealFraction))
		steal = max(steal, p.CPUStealFraction)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ntargets at 20,000 streams on 2 cores: lag P99 < %g ms, arrival error P99 < %g ms, < %g KB per stream\n",
		f.Targets["lag_p99_ms"], f.Targets["arrival_error_p99_ms"], f.Targets["rss_per_stream_kb"])
	if l := max(f.LoadAverage[0], f.LoadAverage[1]); l > float64(f.Cores) {
		fmt.Fprintf(w, "warning: the machine was busy (1-minute load average up to %.1f on %d cores): other processes competed for the CPUs\n", l, f.Cores)
	}
	warnSteal(w, steal)
	return nil
}
