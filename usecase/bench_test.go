package usecase

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/selfbench"
)

// TestBenchRefusesBadOptions checks what bench refuses before it measures anything: an
// unknown scenario, a flag of the other scenario, and values that cannot be measured.
func TestBenchRefusesBadOptions(t *testing.T) {
	client := selfbench.Options{Runs: 3, DispatchStep: 500 * time.Millisecond, LagLimit: time.Millisecond,
		IngestTokens: 1000, Streams: 10, StreamTokens: 10, TokenGap: 50 * time.Millisecond}
	long := selfbench.LongOptions{InFlight: []int{10}, Window: time.Second, RampRate: 100}
	given := func(names ...string) Changed { return func(n string) bool { return slices.Contains(names, n) } }
	for _, tc := range []struct {
		o    BenchOptions
		want string
	}{
		{BenchOptions{Scenario: "soak"}, `--scenario "soak"`},
		{BenchOptions{Scenario: "client", Changed: given("in-flight")}, "--in-flight does not apply to --scenario client"},
		{BenchOptions{Scenario: "long-streams", Changed: given("streams")}, "--streams does not apply to --scenario long-streams"},
		{BenchOptions{Scenario: "client", Client: selfbench.Options{}}, "must be > 0"},
		{BenchOptions{Scenario: "long-streams", Long: selfbench.LongOptions{InFlight: []int{0}, Window: time.Second, RampRate: 1}}, "--in-flight 0"},
		{BenchOptions{Scenario: "long-streams", Long: long, SourceAddrs: "not-an-ip"}, "--source-addrs"},
		{BenchOptions{Scenario: "long-streams", Long: long, Client: selfbench.Options{Runs: 0}, Changed: given("runs")}, "--runs 0"},
	} {
		if tc.o.Scenario == "client" && tc.o.Changed != nil {
			tc.o.Client = client
		}
		env, out, _ := testEnv()
		code, err := Bench(context.Background(), env, &tc.o)
		if code != ExitBadInput || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: exit %d, %v; want 2 and an error with %q", tc.want, code, err, tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%s: stdout holds %q", tc.want, out)
		}
	}
}
