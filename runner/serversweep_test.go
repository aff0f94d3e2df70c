package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
)

func TestParseGridAndTemplateErrors(t *testing.T) {
	cases := []struct {
		name, tmpl, gpus string
		grid             []string
		want             string
	}{
		{"no port", "srv --seqs {seqs}", "", []string{"seqs=1,2"}, "has no {port}"},
		{"unused key", "srv --port {port}", "", []string{"seqs=1,2"}, "does not use {seqs}"},
		{"undefined placeholder", "srv --port {port} --tp {tp}", "", nil, "uses {tp}, which no --grid defines"},
		{"empty template", "  ", "", nil, "--serve-cmd is empty"},
		{"gpus not a key", "srv --port {port} --tp {tp}", "{gpus}", []string{"tp=1,2"}, "no --grid key gpus"},
		{"gpus key not numeric", "srv --port {port} --q {q}", "{q}", []string{"q=fp8,bf16"}, `value "fp8" is not a number`},
		{"gpus zero", "srv --port {port}", "0", nil, "want a number > 0"},
	}
	for _, c := range cases {
		grid, err := ParseGrid(c.grid)
		if err == nil {
			err = CheckServeTemplate(c.tmpl, grid, c.gpus)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	for _, bad := range [][]string{{"seqs"}, {"=1"}, {"port=1"}, {"seqs=1", "seqs=2"}, {"seqs=1,,2"}, {"seqs=1,1"}, {"seqs=a b"}, {"seqs=$(rm)"}, {"seqs=../x"}, {"1x=2"}} {
		if _, err := ParseGrid(bad); err == nil {
			t.Errorf("ParseGrid(%q) accepted", bad)
		}
	}
	grid, err := ParseGrid([]string{"tp=1,2", "seqs=4,8,16"})
	if err != nil {
		t.Fatal(err)
	}
	// Braces that are not a {name} (a JSON argument) are left alone.
	tmpl := `srv --port {port} --tp {tp} --max-num-seqs {seqs} --spec '{"method": "ngram"}'`
	if err := CheckServeTemplate(tmpl, grid, "{tp}"); err != nil {
		t.Fatal(err)
	}
	cs := Configs(grid)
	if len(cs) != 6 || cs[0].Name != "tp=1, seqs=4" || cs[5].Slug != "tp-2_seqs-16" {
		t.Fatalf("configs %+v", cs)
	}
	if got := expand(tmpl, cs[4], 8001); got != `srv --port 8001 --tp 2 --max-num-seqs 8 --spec '{"method": "ngram"}'` {
		t.Errorf("expanded %q", got)
	}
	if g, err := gpusFor("{tp}", cs[4].Values, grid); err != nil || g != 2 {
		t.Errorf("gpus %v %v", g, err)
	}
}

// TestServeHelperChild is the server of TestServerSweep's configurations when this test
// binary runs as one: it serves /health on SERVE_HELPER_PORT, logs a line, and on SIGTERM
// exits, unless SERVE_HELPER_MODE is "stubborn" (it ignores SIGTERM) or "fail" (it exits with
// status 3 at once).
func TestServeHelperChild(t *testing.T) {
	mode := os.Getenv("SERVE_HELPER_MODE")
	if mode == "" {
		return
	}
	fmt.Println("helper server starting, mode", mode)
	if mode == "fail" {
		os.Exit(3)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("SERVE_HELPER_PORT"))
	if err != nil {
		fmt.Println(err)
		os.Exit(4)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for range term {
		if mode != "stubborn" {
			fmt.Println("helper server: SIGTERM, exiting")
			os.Exit(0)
		}
	}
}

// TestServerSweep runs a grid of three configurations of a helper server (this test binary):
// one starts and stops on SIGTERM, one fails to start (recorded, the sweep goes on), one
// ignores SIGTERM and is killed after the stop timeout. Each configuration has its directory
// with its server's log; pareto.json and pareto.html hold the frontier of the points the
// load sweep returned. (GORACE: a race-enabled helper otherwise waits 1 s at exit, longer
// than the stop timeout.)
func TestServerSweep(t *testing.T) {
	out := t.TempDir()
	grid, err := ParseGrid([]string{"mode=ok,fail,stubborn"})
	if err != nil {
		t.Fatal(err)
	}
	swept := map[string]bool{}
	res, err := ServerSweep(context.Background(), ServerSweepOptions{
		Template: "GORACE=atexit_sleep_ms=0 SERVE_HELPER_MODE={mode} SERVE_HELPER_PORT={port} " + os.Args[0] + " -test.run=^TestServeHelperChild$ -test.count=1",
		Grid:     grid, OutDir: out, StartTimeout: 30 * time.Second, StopTimeout: 500 * time.Millisecond, Target: 0.9, SLO: "ttft<=1s",
		Sweep: func(ctx context.Context, url, dir string) (*SweepResult, error) {
			resp, err := http.Get(url + "/health")
			if err != nil {
				return nil, err
			}
			resp.Body.Close()
			swept[filepath.Base(dir)] = true
			k := float64(len(swept))
			return &SweepResult{Points: []metrics.SweepPoint{
				{Rate: 1, OutputTokensPerS: 100 * k, GoodputFraction: 1, TPOTP50: 10},
				{Rate: 2, OutputTokensPerS: 150 * k, GoodputFraction: 1, TPOTP50: 20},
				{Rate: 4, OutputTokensPerS: 300 * k, GoodputFraction: 0.5, TPOTP50: 40},
			}, Capacity: Capacity{Rate: 2}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Configs) != 3 || !swept["mode-ok"] || !swept["mode-stubborn"] || swept["mode-fail"] {
		t.Fatalf("configs %+v, swept %v", res.Configs, swept)
	}
	ok, fail, stubborn := res.Configs[0], res.Configs[1], res.Configs[2]
	if ok.Error != "" || ok.Stopped != "stopped by SIGTERM" || ok.Capacity != 2 || ok.Port == 0 || !strings.Contains(ok.Command, fmt.Sprint(ok.Port)) {
		t.Errorf("ok: %+v", ok)
	}
	if !strings.Contains(fail.Error, "server did not start: the server exited (exit status 3)") {
		t.Errorf("fail: %+v", fail)
	}
	if !strings.HasPrefix(stubborn.Stopped, "killed (SIGKILL) after not exiting within 500ms") || stubborn.Error != "" {
		t.Errorf("stubborn: %+v", stubborn)
	}
	for _, c := range res.Configs {
		b, err := os.ReadFile(c.Log)
		if err != nil || !strings.Contains(string(b), "helper server starting") || filepath.Dir(c.Log) != filepath.Join(out, "mode-"+c.Values["mode"]) {
			t.Errorf("%s: log %s: %v %q", c.Name, c.Log, err, b)
		}
	}
	if b, _ := os.ReadFile(ok.Log); !strings.Contains(string(b), "SIGTERM, exiting") {
		t.Errorf("ok's log %q", b)
	}
	// Two points each within the SLO: the stubborn server's (twice the throughput per GPU)
	// dominate the ok one's at the same per-user throughput.
	var frontier []string
	for _, p := range res.Points {
		if !p.Dominated {
			frontier = append(frontier, fmt.Sprintf("%s@%g", p.Config, p.Load))
		}
	}
	if len(res.Points) != 4 || strings.Join(frontier, " ") != "mode=stubborn@2 mode=stubborn@1" {
		t.Errorf("points %+v", res.Points)
	}
	var back ServerSweepResult
	b, err := os.ReadFile(filepath.Join(out, paretoFile))
	if err != nil || json.Unmarshal(b, &back) != nil || back.Schema != ParetoSchema || len(back.Configs) != 3 {
		t.Fatalf("pareto.json: %v %s", err, b)
	}
	page, err := os.ReadFile(filepath.Join(out, paretoHTMLFile))
	if err != nil || !strings.Contains(string(page), "<svg") || !strings.Contains(string(page), "mode=fail: server did not start") {
		t.Errorf("pareto.html: %v", err)
	}
}

// TestServerSweepRefusesBadInputBeforeStarting: a template without {port} starts nothing and
// writes nothing.
func TestServerSweepRefusesBadInputBeforeStarting(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	grid, _ := ParseGrid([]string{"seqs=1,2"})
	_, err := ServerSweep(context.Background(), ServerSweepOptions{Template: "touch " + out + "-{seqs}", Grid: grid, OutDir: out,
		Sweep: func(context.Context, string, string) (*SweepResult, error) { t.Fatal("swept"); return nil, nil }})
	if err == nil || !strings.Contains(err.Error(), "has no {port}") {
		t.Fatalf("error %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output written: %v", err)
	}
}
