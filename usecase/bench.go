package usecase

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/llmbench/llmbench/internal/hoststat"
	"github.com/llmbench/llmbench/internal/selfbench"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
)

// BenchOptions are `llmbench bench`'s options: the scenario and the self-benchmark's own
// options (selfbench's, which the flags fill directly).
type BenchOptions struct {
	JSON     bool
	Quick    bool
	Client   selfbench.Options
	Scenario string
	Long     selfbench.LongOptions
	// SourceAddrs are long-streams' local addresses to dial from.
	SourceAddrs string
	// Changed says which flags were given (--quick keeps theirs; a flag of the other scenario
	// is refused).
	Changed Changed
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Flags that apply to one scenario only: given with the other, they are refused rather than
// ignored.
var (
	clientOnlyFlags = []string{"quick", "dispatch-step", "lag-limit", "ingest-tokens", "streams", "stream-tokens"}
	longOnlyFlags   = []string{"in-flight", "window", "ramp-rate", "http2", "source-addrs"}
)

// Bench measures llmbench's own client against a built-in server (--scenario client) or long
// streams (long-streams), prints the figures (or JSON) and returns the exit status and error.
func Bench(ctx context.Context, env *Env, o *BenchOptions) (int, error) {
	var other []string
	switch o.Scenario {
	case "client":
		other = longOnlyFlags
	case "long-streams":
		other = clientOnlyFlags
	default:
		return ExitBadInput, fmt.Errorf("--scenario %q: want client or long-streams", o.Scenario)
	}
	for _, name := range other {
		if o.Changed.Has(name) {
			return ExitBadInput, fmt.Errorf("--%s does not apply to --scenario %s", name, o.Scenario)
		}
	}
	if o.Scenario == "long-streams" {
		return o.long(ctx, env)
	}
	so := o.Client
	if so.Runs < 1 || so.IngestTokens < 1 || so.Streams < 1 || so.StreamTokens < 1 || so.DispatchStep <= 0 || so.LagLimit <= 0 || so.TokenGap <= 0 {
		return ExitBadInput, fmt.Errorf("--runs, --ingest-tokens, --streams, --stream-tokens, --dispatch-step, --lag-limit and --token-gap must be > 0")
	}
	if o.Quick {
		// --quick changes the defaults; a flag given with it still says what it says.
		set := func(name string) bool { return o.Changed.Has(name) }
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
	if !o.JSON && env.ShowProgress {
		so.Log = env.Stderr
	}
	ctx, cancel := env.cancelOnInterrupt(ctx)
	defer cancel()
	load0, steal := runner.LoadAverage(), hoststat.Since()
	f, err := selfbench.Run(ctx, so)
	if err != nil {
		return ExitBadInput, fmt.Errorf("bench: %w", err)
	}
	h := runner.HostFacts()
	f.CPUModel, f.Cores, f.GoVersion, f.GOMAXPROCS = h.CPUModel, h.CPUs, h.GoVersion, runtime.GOMAXPROCS(0)
	f.LoadAverage = [2]float64{load0, runner.LoadAverage()}
	f.CPUStealFraction = steal()
	if o.JSON {
		return exitOf(writeJSON(env.Stdout, f))
	}
	return exitOf(printBench(env.Stdout, f))
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
func (env *Env) cancelOnInterrupt(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if env.Interrupts != nil {
		go func() {
			select {
			case <-env.Interrupts:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}
