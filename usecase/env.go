package usecase

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llmbench/llmbench/internal/reaper"
	"github.com/llmbench/llmbench/internal/redact"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
)

// Exit statuses of the commands (docs/comparing.md, "Exit codes").
const (
	ExitOK          = 0   // done; no regression, no broken rule
	ExitRegression  = 1   // a regression or a --fail-on rule broken (compare, ab, sweep --fail-on)
	ExitBadInput    = 2   // bad flags, trace, results directory or other input
	ExitRunFailed   = 3   // the run failed: no request succeeded, or more than --max-failure-rate failed
	ExitLateStart   = 4   // a shard did not start: it was ready later than --start-at + --start-grace
	ExitInterrupted = 130 // interrupted (Ctrl-C, SIGTERM) after writing the results gathered so far
)

// Env is the process environment a use case runs in: where it prints, the environment, the
// interrupts, the command line. cmd/llmbench builds it from the process; tests over buffers.
type Env struct {
	Stdout io.Writer
	// Stderr takes messages and progress (io.Discard under --quiet).
	Stderr io.Writer
	// Getenv reads the environment (os.Getenv in the CLI).
	Getenv func(string) string
	// IsTerminal reports whether Stderr is an interactive terminal (live panel vs lines).
	IsTerminal bool
	// TermWidth is the terminal's width in columns (0: unknown, the display uses 100).
	TermWidth int
	// Interrupts delivers Ctrl-C / SIGTERM (nil: never interrupted).
	Interrupts <-chan os.Signal
	// Exit ends the process at once (second Ctrl-C).
	Exit func(code int)
	// Interrupted is set by the first interrupt (the command then ends with exit 130); nil
	// when the caller does not watch it.
	Interrupted *atomic.Bool
	// Args are the command-line arguments as given (recorded redacted, see CommandLine).
	Args []string
	// Version is the build's version, recorded in the run facts.
	Version string
	// Config is the command's flags with their values, less secrets: summary.json's
	// run.config.
	Config map[string]string
	// ShowProgress is false under --no-progress or --quiet.
	ShowProgress bool
	// Executable is the llmbench executable ("" when unknown): sweep --serve-cmd runs it as
	// each server's process-group keeper (Keeper).
	Executable string
}

// KeeperArg is the first argument that makes llmbench the process-group keeper of a server it
// starts (internal/reaper); cmd's main hands such a command line to Keeper before anything
// else.
const KeeperArg = reaper.Arg

// Keeper runs llmbench as the keeper of a server's process group (args follow KeeperArg) and
// returns the process's exit status.
func Keeper(args []string, stderr io.Writer) int { return reaper.Main(args, stderr) }

// interrupted reports whether the first interrupt has come.
func (e *Env) interrupted() bool { return e.Interrupted != nil && e.Interrupted.Load() }

// interrupts is the interrupt handling of a run: the first interrupt sets Interrupted.
func (e *Env) interrupts() runner.Interrupts {
	return runner.Interrupts{C: e.Interrupts, Log: e.Stderr, Exit: e.Exit, OnFirst: func() {
		if e.Interrupted != nil {
			e.Interrupted.Store(true)
		}
	}}
}

// watchInterrupts cancels the run on the first interrupt (after grace for the requests in
// flight) and exits at once on the second; the returned function stops watching.
func (e *Env) watchInterrupts(cancel func(), flush func(), grace time.Duration) func() {
	return e.interrupts().Watch(cancel, flush, grace)
}

// config is a copy of the command's flag configuration (summary.json's run.config).
func (e *Env) config() map[string]string { return maps.Clone(e.Config) }

// FailureOptions carry --max-failure-rate.
type FailureOptions struct {
	// MaxRate is the largest fraction of failed requests a run may have and still pass.
	MaxRate float64
}

// Check refuses a --max-failure-rate outside [0, 1].
func (f FailureOptions) Check() error {
	if f.MaxRate < 0 || f.MaxRate > 1 || f.MaxRate != f.MaxRate {
		return fmt.Errorf("--max-failure-rate %g: want a fraction in [0, 1], e.g. 0.05", f.MaxRate)
	}
	return nil
}

// MeasuredExit is the exit status of a measuring command whose results are written: 130 when
// it was interrupted, 3 when a run failed (no request succeeded, or more than MaxRate
// failed), else 0 with a nil error.
func MeasuredExit(env *Env, f FailureOptions, sums ...*metrics.Summary) (int, error) {
	if env.interrupted() {
		return ExitInterrupted, errors.New("interrupted: the results gathered so far are written")
	}
	for _, s := range sums {
		if why := runner.RunFailure(s, f.MaxRate); why != "" {
			return ExitRunFailed, fmt.Errorf("the run failed: %s", why)
		}
	}
	return ExitOK, nil
}

// CommandLine is the command as typed, redacted by the policy of the target it names (its
// --endpoint and --header values; see internal/redact).
func CommandLine(args []string) string {
	return CommandPolicy(args).Command("llmbench", args)
}

// CommandPolicy builds the redaction policy of the target named in args.
func CommandPolicy(args []string) *redact.Policy {
	var t redact.Target
	for i, a := range args {
		name, v, inline := strings.Cut(a, "=")
		if !inline {
			if i+1 >= len(args) {
				continue
			}
			v = args[i+1]
		}
		switch name {
		case "--endpoint":
			t.URL = v
		case "--a-endpoint", "--b-endpoint":
			t.MoreURLs = append(t.MoreURLs, v)
		case "--scrape-workers": // run's workers behind the endpoint (issue 34)
			t.MoreURLs = append(t.MoreURLs, strings.Split(v, ",")...)
		case "--header":
			if t.Headers == nil {
				t.Headers = map[string]string{}
			}
			k, hv, _ := strings.Cut(v, ":")
			t.Headers[strings.TrimSpace(k)] = strings.TrimSpace(hv)
		}
	}
	return redact.New(t)
}

// Changed reports whether a flag was given on the command line (pflag's Changed); nil means
// none was.
type Changed func(name string) bool

// Has reports whether the flag name was given.
func (c Changed) Has(name string) bool { return c != nil && c(name) }

// clip shortens a value quoted in an error message to at most n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
