package usecase

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/runner"
)

// defaultRun is run's options as the CLI's flag defaults set them, against the embedded
// engine at 20 times real time over the first 12 requests of chat-small.
func defaultRun(t *testing.T) *RunOptions {
	ab := defaultAB(t)
	return &RunOptions{Trace: ab.Trace, Target: ab.Target, Load: ab.Load, Metrics: ab.Metrics,
		Output: ab.Output, Engine: ab.Engine, Fail: ab.Fail, Quality: ab.Quality,
		Capacity: CapacityOptions{SaturationMin: DefaultSaturationMinTime, SaturationTTFT: DefaultSaturationMinTTFT}}
}

// TestRunEmbeddedWithoutCobra replays a trace on the embedded engine from RunOptions alone:
// summary.json with the run facts the Env gave (version, configuration, engine seed), the
// summary and the results line on stdout, the compare hint on stderr.
func TestRunEmbeddedWithoutCobra(t *testing.T) {
	o := defaultRun(t)
	o.Engine.Seed = "7"
	env, out, errb := testEnv()
	env.Config = map[string]string{"max-requests": "12"}
	code, err := Run(context.Background(), env, o)
	if err != nil || code != ExitOK {
		t.Fatalf("Run: exit %d, %v; stderr:\n%s", code, err, errb)
	}
	s, err := runner.ReadSummary(o.Output.Out)
	if err != nil {
		t.Fatal(err)
	}
	if s.Run.Version != "test" || s.Run.EngineSeed != 7 || s.Run.Config["max-requests"] != "12" || s.Run.TimeScale != 20 {
		t.Errorf("run facts: version %q, engine seed %d, config %v, time scale %g", s.Run.Version, s.Run.EngineSeed, s.Run.Config, s.Run.TimeScale)
	}
	if s.Requests.Total != 12 || s.Requests.Succeeded != 12 {
		t.Errorf("requests %d, succeeded %d; want 12 and 12", s.Requests.Total, s.Requests.Succeeded)
	}
	if !strings.Contains(out.String(), "results: "+o.Output.Out) || !strings.Contains(errb.String(), "llmbench compare") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, errb)
	}
}

// TestRunFailedServerExits3 runs against a server on 127.0.0.1 that answers every request
// with 500: the results are written and the exit status is 3 with the reason.
func TestRunFailedServerExits3(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"down"}}`, http.StatusInternalServerError)
	}))
	defer srv.Close()
	o := defaultRun(t)
	o.Target.Endpoint = srv.URL
	o.Target.Tokenizer, o.Target.PromptSizing = "approx", "tokenizer"
	o.Engine.Changed = func(n string) bool { return n == "model" }
	o.Load.TimeScale, o.Load.RateScale, o.Trace.TimeScale = 1, 50, 1
	o.Load.MaxRequests = 4
	env, _, errb := testEnv()
	code, err := Run(context.Background(), env, o)
	if code != ExitRunFailed || err == nil || !strings.Contains(err.Error(), "the run failed") {
		t.Fatalf("exit %d, %v; want 3 and the run failed; stderr:\n%s", code, err, errb)
	}
	if _, err := os.Stat(filepath.Join(o.Output.Out, runner.SummaryFile)); err != nil {
		t.Errorf("a failed run still writes its summary: %v", err)
	}
}

// TestShardOptions checks the shard flags' refusals and an auto index from the environment.
func TestShardOptions(t *testing.T) {
	getenv := func(k string) string {
		if k == "JOB_COMPLETION_INDEX" {
			return "1"
		}
		return ""
	}
	for _, tc := range []struct {
		o        ShardOptions
		endpoint string
		want     string
	}{
		{ShardOptions{StartIn: time.Second}, "http://h:1", "need --shard"},
		{ShardOptions{Shard: "0/2"}, "", "--shard needs --endpoint"},
		{ShardOptions{Shard: "0/2", ClockWait: -time.Second}, "http://h:1", "--clock-wait -1s"},
		{ShardOptions{Shard: "0/2", StartAt: "2026-12-01T15:00:00Z", StartIn: time.Second}, "http://h:1", "exclude each other"},
		{ShardOptions{Shard: "0/2", StartAt: "tomorrow"}, "http://h:1", `--start-at "tomorrow"`},
		{ShardOptions{Shard: "0/2", StartIn: -time.Second}, "http://h:1", "--start-in -1s"},
		{ShardOptions{Shard: "0/2", StartIn: time.Second, StartGrace: time.Second, GraceGiven: true}, "http://h:1", "give --start-at"},
		{ShardOptions{Shard: "0/2", StartAt: "2026-12-01T15:00:00Z", GraceGiven: true}, "http://h:1", "--start-grace 0s: must be > 0"},
		{ShardOptions{StartGrace: time.Second, GraceGiven: true}, "http://h:1", "need --shard"},
	} {
		if _, err := tc.o.Options(getenv, "t.jsonl", tc.endpoint); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.o, err, tc.want)
		}
	}
	so, err := (&ShardOptions{Shard: "auto/3", StartAt: "2026-12-01T15:00:00Z"}).Options(getenv, "t.jsonl", "http://h:1")
	if err != nil || so.Shard.Index != 1 || so.Shard.Count != 3 || so.StartAt.IsZero() || so.TracePath != "t.jsonl" {
		t.Fatalf("auto/3: %+v, %v", so, err)
	}
	if so.StartGrace != DefaultStartGrace {
		t.Fatalf("start grace %s, want the default %s", so.StartGrace, DefaultStartGrace)
	}
	if so, err := (&ShardOptions{}).Options(getenv, "t.jsonl", ""); so != nil || err != nil {
		t.Fatalf("no shard: %+v, %v", so, err)
	}
}
