package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/redact"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
)

// Files of a server-configuration sweep (docs/capacity.md).
const (
	paretoFile     = "pareto.json"
	paretoHTMLFile = "pareto.html"
	serverLogFile  = "server.log"
)

// ParetoSchema is the schema of pareto.json.
const ParetoSchema = "llmbench.pareto/v1"

// ServerSweepOptions configures `sweep --serve-cmd`: one server per grid configuration,
// started, waited for, swept and stopped in turn.
type ServerSweepOptions struct {
	// Template is the server command with {port} and a {KEY} per grid axis; Grid the axes
	// (checked with CheckServeTemplate before anything starts).
	Template string
	Grid     []GridAxis
	// GPUs is --gpus-per-server: a number, or {KEY} of a numeric grid axis ("": 1).
	GPUs   string
	OutDir string
	// HealthPath is the path polled until it answers 2xx ("": /health); StartTimeout bounds
	// the wait (0: 10 minutes, a large model's load time) and StopTimeout the wait after
	// SIGTERM before SIGKILL (0: 30 s).
	HealthPath   string
	StartTimeout time.Duration
	StopTimeout  time.Duration
	// Target is the goodput fraction at which a load point counts on the frontier; SLO its
	// words.
	Target float64
	SLO    string
	// Keeper is the llmbench executable, which runs as each server's process-group keeper
	// (internal/reaper, Linux): it stops every process the server started, also one that left
	// the group, and also when llmbench is killed outright. "": the server's shell leads its
	// group itself (on Linux it gets SIGKILL when llmbench ends; its children do not).
	Keeper string
	// Log, when set, gets a line as each server starts, fails or stops.
	Log io.Writer
	// Sweep runs one configuration's load sweep against the server at url into dir.
	Sweep func(ctx context.Context, url, dir string) (*SweepResult, error)
	HTML  reports.HTMLOptions
}

// ServerSweepResult is pareto.json: each configuration's outcome and the frontier of
// throughput per GPU against throughput per user over their points that meet the SLO.
type ServerSweepResult struct {
	Schema   string                `json:"schema"`
	Template string                `json:"serve_cmd"`
	Target   float64               `json:"goodput_target"`
	SLO      string                `json:"slo"`
	Configs  []ServerRun           `json:"configs"`
	Points   []metrics.ParetoPoint `json:"points"` // by throughput per user; Dominated false: the frontier
}

// ServerRun is one configuration of the grid.
type ServerRun struct {
	Name   string            `json:"name"`
	Values map[string]string `json:"values"`
	// Dir is the configuration's directory (its sweep.json, its points, server.log).
	Dir     string  `json:"dir"`
	Command string  `json:"command"` // expanded, secrets redacted
	Port    int     `json:"port"`
	GPUs    float64 `json:"gpus"`
	Log     string  `json:"log"`
	// Error says why the configuration has no sweep (the server did not start or become
	// healthy, or the sweep failed); the sweep went on to the next.
	Error string `json:"error,omitempty"`
	// Stopped says how the server ended.
	Stopped string `json:"stopped,omitempty"`
	// Capacity is the configuration's capacity (req/s or concurrency; 0: none found).
	Capacity float64 `json:"capacity"`
}

// ServerSweep runs every configuration of o.Grid in turn and writes pareto.json and
// pareto.html under o.OutDir. A configuration that fails is recorded and the sweep goes on;
// an interruption (ctx) stops it after stopping the current server.
func ServerSweep(ctx context.Context, o ServerSweepOptions) (*ServerSweepResult, error) {
	if err := CheckServeTemplate(o.Template, o.Grid, o.GPUs); err != nil {
		return nil, err
	}
	if o.Sweep == nil {
		return nil, fmt.Errorf("server sweep: no load sweep to run")
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, err
	}
	res := &ServerSweepResult{Schema: ParetoSchema, Template: redact.CommandString(o.Template), Target: o.Target, SLO: o.SLO}
	var err error
	for _, c := range Configs(o.Grid) {
		if err = ctx.Err(); err != nil {
			break
		}
		run, points := o.one(ctx, c)
		res.Configs = append(res.Configs, run)
		res.Points = append(res.Points, points...)
	}
	metrics.MarkDominated(res.Points)
	if werr := WriteJSON(filepath.Join(o.OutDir, paretoFile), res); werr != nil && err == nil {
		err = werr
	}
	if werr := writeParetoHTML(o, res); werr != nil && err == nil {
		err = werr
	}
	return res, err
}

// one runs configuration c: its server, its load sweep, the server stopped.
func (o ServerSweepOptions) one(ctx context.Context, c ServerConfig) (ServerRun, []metrics.ParetoPoint) {
	dir := filepath.Join(o.OutDir, c.Slug)
	run := ServerRun{Name: c.Name, Values: c.Values, Dir: dir, Log: filepath.Join(dir, serverLogFile)}
	run.GPUs, _ = gpusFor(o.GPUs, c.Values, o.Grid) // checked by CheckServeTemplate
	fail := func(err error) (ServerRun, []metrics.ParetoPoint) {
		run.Error = err.Error()
		o.logf("sweep: %s: %s (the sweep goes on; log %s)", c.Name, run.Error, run.Log)
		return run, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	port, err := freePort()
	if err != nil {
		return fail(err)
	}
	command := expand(o.Template, c, port)
	run.Port, run.Command = port, redact.CommandString(command)
	o.logf("sweep: starting %s: %s", c.Name, run.Command)
	proc, err := startServer(command, run.Log, o.Keeper, o.stopTimeout())
	if err != nil {
		return fail(err)
	}
	points := o.sweepServer(ctx, c, proc, port, &run)
	run.Stopped = proc.stop(o.stopTimeout())
	o.logf("sweep: %s: server %s", c.Name, run.Stopped)
	return run, points
}

// sweepServer waits for the started server of c to be healthy and runs its load sweep,
// noting a failure in run; it returns the configuration's points that meet the SLO.
func (o ServerSweepOptions) sweepServer(ctx context.Context, c ServerConfig, proc *serverProc, port int, run *ServerRun) []metrics.ParetoPoint {
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	if err := proc.waitHealthy(ctx, url+o.healthPath(), o.startTimeout()); err != nil {
		run.Error = "server did not start: " + err.Error()
		o.logf("sweep: %s: %s (the sweep goes on; log %s)", c.Name, run.Error, run.Log)
		return nil
	}
	sw, err := o.Sweep(ctx, url, run.Dir)
	if err != nil {
		run.Error = "sweep: " + err.Error()
		o.logf("sweep: %s: %s", c.Name, run.Error)
	}
	if sw == nil {
		return nil
	}
	run.Capacity = sw.Capacity.Rate
	return metrics.ParetoPoints(c.Name, run.GPUs, sw.Points, o.Target)
}

func (o ServerSweepOptions) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

func (o ServerSweepOptions) healthPath() string {
	if o.HealthPath == "" {
		return "/health"
	}
	if !strings.HasPrefix(o.HealthPath, "/") {
		return "/" + o.HealthPath
	}
	return o.HealthPath
}

func (o ServerSweepOptions) startTimeout() time.Duration {
	if o.StartTimeout <= 0 {
		return 10 * time.Minute
	}
	return o.StartTimeout
}

func (o ServerSweepOptions) stopTimeout() time.Duration {
	if o.StopTimeout <= 0 {
		return 30 * time.Second
	}
	return o.StopTimeout
}

// writeParetoHTML renders pareto.html from the result.
func writeParetoHTML(o ServerSweepOptions, res *ServerSweepResult) error {
	p := &reports.Pareto{SLO: res.SLO, Target: res.Target, Points: res.Points}
	for _, c := range res.Configs {
		p.Configs = append(p.Configs, reports.ParetoConfig{Name: c.Name, Command: c.Command, GPUs: c.GPUs, Capacity: c.Capacity, Error: c.Error,
			Log: relTo(o.OutDir, c.Log), Dir: relTo(o.OutDir, c.Dir)})
	}
	var b strings.Builder
	if err := reports.WriteParetoHTML(&b, p, o.HTML); err != nil {
		return fmt.Errorf("render %s: %w", paretoHTMLFile, err)
	}
	return WriteFileAtomic(filepath.Join(o.OutDir, paretoHTMLFile), []byte(b.String()))
}

// relTo is path relative to base when it can be (links in the page), else path.
func relTo(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil {
		return r
	}
	return path
}
