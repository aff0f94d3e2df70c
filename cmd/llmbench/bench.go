package main

import (
	"time"

	"github.com/llmbench/llmbench/usecase"
	"github.com/spf13/cobra"
)

func init() { register("bench", newBenchCmd) }

func newBenchCmd(app *App) *cobra.Command {
	o := &usecase.BenchOptions{}
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
			o.Changed = cmd.Flags().Changed
			return exitStatus(usecase.Bench(cmd.Context(), app.env(), o))
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&o.JSON, "json", false, "print the figures and machine facts as one JSON object")
	fs.BoolVar(&o.Quick, "quick", false, "defaults for a short check: one run, 300ms dispatch steps, 30-token streams, 300,000 ingest tokens (about 5-15 s); flags given with it keep their values")
	fs.IntVar(&o.Client.Runs, "runs", 3, "repetitions of each measurement; the median is reported (long-streams: default 1)")
	fs.DurationVar(&o.Client.DispatchStep, "dispatch-step", 500*time.Millisecond, "length of each rate step of the dispatch test")
	fs.DurationVar(&o.Client.LagLimit, "lag-limit", time.Millisecond, "schedule-lag P99 a dispatch rate must stay under")
	fs.IntVar(&o.Client.IngestTokens, "ingest-tokens", 1_000_000, "tokens streamed in the ingest test")
	fs.IntVar(&o.Client.Streams, "streams", 1000, "concurrent streams in the arrival-error test")
	fs.IntVar(&o.Client.StreamTokens, "stream-tokens", 60, "tokens per stream in the arrival-error test")
	fs.DurationVar(&o.Client.TokenGap, "token-gap", 50*time.Millisecond, "gap between a stream's tokens in the arrival-error test (long-streams: default 100ms)")
	fs.StringVar(&o.Scenario, "scenario", "client", "what to measure: client (dispatch, ingest, arrival error) or long-streams")
	fs.IntSliceVar(&o.Long.InFlight, "in-flight", []int{1000, 5000, 20000}, "long-streams: numbers of concurrent streams to measure, one point each")
	fs.DurationVar(&o.Long.Window, "window", 5*time.Second, "long-streams: how long all the streams of a point are open at once")
	fs.Float64Var(&o.Long.RampRate, "ramp-rate", 2000, "long-streams: new streams per second before the window")
	fs.BoolVar(&o.Long.HTTP2, "http2", false, "long-streams: the client speaks HTTP/2 (h2c) to the built-in server")
	fs.StringVar(&o.SourceAddrs, "source-addrs", "", "long-streams: local addresses to dial from in turn, e.g. 127.0.0.2-127.0.0.9")
	return cmd
}
