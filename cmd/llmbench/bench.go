package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/internal/hoststat"
	"github.com/llmbench/llmbench/internal/selfbench"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
)

func init() { register("bench", newBenchCmd) }

type benchOptions struct {
	json  bool
	quick bool
	sb    selfbench.Options
	// The long-streams scenario (issue 18).
	scenario    string
	long        selfbench.LongOptions
	sourceAddrs string
	// changed reports whether a flag was given (the flag set's Changed).
	changed func(name string) bool
}

func newBenchCmd(app *App) *cobra.Command {
	o := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure llmbench's own client: dispatch rate, token ingest rate and timing error",
		Long: `bench starts a minimal streaming server of its own on 127.0.0.1 (pre-rendered responses, in
this process) and measures the load generator against it, so you can check that the harness
was not the bottleneck of a run on this machine:

  dispatch_req_per_s    highest open-loop rate of short streamed requests whose schedule lag
                        P99 stays under --lag-limit (target >= 5,000); the rate doubles
                        from 1,000 until a step misses twice in a row, then bisects
  ingest_tokens_per_s   streamed tokens (one per chunk) parsed, timestamped and counted per
                        second by one request's reader: one core (target >= 200,000)
  arrival_error_p99_ms  client token arrival time minus the server's send time, P99 over
                        every token sent while all --streams streams were open
                        (target <= 1 ms)
  client_cpu_fraction   process CPU over wall time x CPUs during the streams test
                        (it includes the built-in server)

Each figure is the median of --runs repetitions; every run's value is printed too, so the
noise is visible. The default takes 25-90 s (longer the higher the rates this machine holds);
--quick about 5-15 s.

--scenario long-streams measures instead, for each number of concurrent streams in
--in-flight, streams of one token every --token-gap (default 100ms here: 10 tokens/s)
started at --ramp-rate per second and all open for --window:

  lag_p99_ms            schedule lag P99 over every stream
  arrival_error_p99_ms  client arrival minus server send time of the tokens sent in the
                        window (up to 1,000 streams sampled)
  rss_per_stream_kb     resident memory in the middle of the window minus before, per
                        stream; the built-in server runs in this process and is included
  connections           connections dialed (--http2 multiplexes the streams)
  wake_floor_p99_ms     how late the client's own sleeps woke just before the point, with
                        nothing else running: this machine's floor under lag_p99_ms
  steal                 CPU time the hypervisor gave to other machines during the point
                        (virtual machines; /proc/stat): stalls no client can remove

Each point runs once, or --runs times with the medians reported and every run printed.

Over HTTP/1.1 every stream holds two file descriptors (both ends are in this process): a
point that needs more than the limit is skipped with a note; --http2 needs few.`,
		Example: `  llmbench bench
  llmbench bench --json
  llmbench bench --quick --streams 200
  llmbench bench --scenario long-streams --in-flight 1000,5000
  llmbench bench --scenario long-streams --http2 --in-flight 20000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.changed = cmd.Flags().Changed
			return runBench(cmd.Context(), app, o)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.json, "json", false, "print the figures and machine facts as one JSON object")
	fs.BoolVar(&o.quick, "quick", false, "defaults for a short check: one run, 300ms dispatch steps, 30-token streams, 300,000 ingest tokens (about 5-15 s); flags given with it keep their values")
	fs.IntVar(&o.sb.Runs, "runs", 3, "repetitions of each measurement; the median is reported (long-streams: default 1)")
	fs.DurationVar(&o.sb.DispatchStep, "dispatch-step", 500*time.Millisecond, "length of each rate step of the dispatch test")
	fs.DurationVar(&o.sb.LagLimit, "lag-limit", time.Millisecond, "schedule-lag P99 a dispatch rate must stay under")
	fs.IntVar(&o.sb.IngestTokens, "ingest-tokens", 1_000_000, "tokens streamed in the ingest test")
	fs.IntVar(&o.sb.Streams, "streams", 1000, "concurrent streams in the arrival-error test")
	fs.IntVar(&o.sb.StreamTokens, "stream-tokens", 60, "tokens per stream in the arrival-error test")
	fs.DurationVar(&o.sb.TokenGap, "token-gap", 50*time.Millisecond, "gap between a stream's tokens in the arrival-error test (long-streams: default 100ms)")
	fs.StringVar(&o.scenario, "scenario", "client", "what to measure: client (dispatch, ingest, arrival error) or long-streams")
	fs.IntSliceVar(&o.long.InFlight, "in-flight", []int{1000, 5000, 20000}, "long-streams: numbers of concurrent streams to measure, one point each")
	fs.DurationVar(&o.long.Window, "window", 5*time.Second, "long-streams: how long all the streams of a point are open at once")
	fs.Float64Var(&o.long.RampRate, "ramp-rate", 2000, "long-streams: new streams per second before the window")
	fs.BoolVar(&o.long.HTTP2, "http2", false, "long-streams: the client speaks HTTP/2 (h2c) to the built-in server")
	fs.StringVar(&o.sourceAddrs, "source-addrs", "", "long-streams: local addresses to dial from in turn, e.g. 127.0.0.2-127.0.0.9")
	return cmd
}

// Flags that apply to one scenario only: given with the other, they are refused rather than
// ignored.
var (
	clientOnlyFlags = []string{"quick", "dispatch-step", "lag-limit", "ingest-tokens", "streams", "stream-tokens"}
	longOnlyFlags   = []string{"in-flight", "window", "ramp-rate", "http2", "source-addrs"}
)

func runBench(ctx context.Context, app *App, o *benchOptions) error {
	var other []string
	switch o.scenario {
	case "client":
		other = longOnlyFlags
	case "long-streams":
		other = clientOnlyFlags
	default:
		return &exitError{code: 2, err: fmt.Errorf("--scenario %q: want client or long-streams", o.scenario)}
	}
	for _, name := range other {
		if o.changed != nil && o.changed(name) {
			return &exitError{code: 2, err: fmt.Errorf("--%s does not apply to --scenario %s", name, o.scenario)}
		}
	}
	if o.scenario == "long-streams" {
		return runLongBench(ctx, app, o)
	}
	so := o.sb
	if so.Runs < 1 || so.IngestTokens < 1 || so.Streams < 1 || so.StreamTokens < 1 || so.DispatchStep <= 0 || so.LagLimit <= 0 || so.TokenGap <= 0 {
		return &exitError{code: 2, err: fmt.Errorf("--runs, --ingest-tokens, --streams, --stream-tokens, --dispatch-step, --lag-limit and --token-gap must be > 0")}
	}
	if o.quick {
		// --quick changes the defaults; a flag given with it still says what it says.
		set := func(name string) bool { return o.changed != nil && o.changed(name) }
		if !set("runs") {
			so.Runs = 1
		}
		if !set("dispatch-step") {
			so.DispatchStep = 300 * time.Millisecond
		}
		if !set("ingest-tokens") {
			so.IngestTokens = 300_000
		}
		if !set("stream-tokens") {
			so.StreamTokens = 30
		}
	}
	if !o.json && app.showProgress() {
		so.Log = app.Stderr
	}
	ctx, cancel := app.cancelOnInterrupt(ctx)
	defer cancel()
	load0, steal := runner.LoadAverage(), hoststat.Since()
	f, err := selfbench.Run(ctx, so)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	h := runner.HostFacts()
	f.CPUModel, f.Cores, f.GoVersion, f.GOMAXPROCS = h.CPUModel, h.CPUs, h.GoVersion, runtime.GOMAXPROCS(0)
	f.LoadAverage = [2]float64{load0, runner.LoadAverage()}
	f.CPUStealFraction = steal()
	if o.json {
		return writeJSONTo(app.Stdout, f)
	}
	return printBench(app.Stdout, f)
}

func printBench(w io.Writer, f *selfbench.Figures) error {
	fmt.Fprintf(w, "machine: %s, %d cores (GOMAXPROCS %d), %s\n\n", f.CPUModel, f.Cores, f.GOMAXPROCS, f.GoVersion)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tmedian\ttarget\truns\t")
	mark := func(k string) string {
		if f.MeetsTargets[k] {
			return "ok"
		}
		return "MISSED"
	}
	fmt.Fprintf(tw, "dispatch_req_per_s\t%.0f\t>= %.0f %s\t%s\t\n", f.DispatchReqPerS, selfbench.Targets["dispatch_req_per_s"], mark("dispatch_req_per_s"), runsOf(f.Runs.DispatchReqPerS, "%.0f"))
	fmt.Fprintf(tw, "ingest_tokens_per_s\t%.0f\t>= %.0f %s\t%s\t\n", f.IngestTokensPerS, selfbench.Targets["ingest_tokens_per_s"], mark("ingest_tokens_per_s"), runsOf(f.Runs.IngestTokensPerS, "%.0f"))
	fmt.Fprintf(tw, "arrival_error_p99_ms\t%.3f\t<= %.0f %s\t%s\t\n", f.ArrivalErrorP99Ms, selfbench.Targets["arrival_error_p99_ms"], mark("arrival_error_p99_ms"), runsOf(f.Runs.ArrivalErrorP99Ms, "%.3f"))
	fmt.Fprintf(tw, "client_cpu_fraction\t%.2f\t\t%s\t\n", f.ClientCPUFraction, runsOf(f.Runs.ClientCPUFraction, "%.2f"))
	if err := tw.Flush(); err != nil {
		return err
	}
	if l := max(f.LoadAverage[0], f.LoadAverage[1]); l > float64(f.Cores) {
		fmt.Fprintf(w, "\nwarning: the machine was busy (1-minute load average up to %.1f on %d cores): other processes competed for the CPUs, so the timing figures measure that contention as much as llmbench\n", l, f.Cores)
	}
	warnSteal(w, f.CPUStealFraction)
	fmt.Fprintf(w, "\ndispatch lag P99 at that rate: %.3f ms; arrival error P50 %.3f ms, max %.3f ms; %d streams x %d tokens; %.1f s in all\n",
		f.DispatchLagP99Ms, f.ArrivalErrorP50Ms, f.ArrivalErrorMaxMs, f.Settings.Streams, f.Settings.StreamTokens, f.ElapsedS)
	return nil
}

// warnSteal says when the hypervisor took more than metrics.StealWarning of the CPU time (a
// run's summary warns at the same share).
func warnSteal(w io.Writer, steal float64) {
	if steal > metrics.StealWarning {
		fmt.Fprintf(w, "\nwarning: the hypervisor gave %s of this machine's CPU time to others (steal): the timing figures include those stalls, which no client can remove; measure again when the host is quieter\n", selfbench.Percent(steal))
	}
}

func runsOf(v []float64, format string) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf(format, x)
	}
	return s
}

// cancelOnInterrupt returns ctx canceled at the first interrupt (bench stops the measurement
// and reports nothing); cancel releases it.
func (app *App) cancelOnInterrupt(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if app.Interrupts != nil {
		go func() {
			select {
			case <-app.Interrupts:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}
