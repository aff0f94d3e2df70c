// Command llmbench is the CLI: cobra commands that parse flags into an options struct, call one
// function of a package (runner, runner/engineadapter, traces, workloads, metrics, reports)
// and print. No measurement, statistics or network logic lives here; each command registers
// itself from its own file (see docs/ARCHITECTURE.md, "Adding a command").
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sort"
	"sync/atomic"
	"syscall"

	"github.com/llmbench/llmbench/usecase"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// devVersion is the version of a build that was not stamped.
const devVersion = "0.1.0-dev"

// version is set at build time with -ldflags "-X main.version=..." (see `llmbench version`).
var version = devVersion

// App is the process environment the commands use; tests build one over buffers.
type App struct {
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment (os.Getenv in main).
	Getenv func(string) string
	// IsTerminal reports whether Stderr is an interactive terminal (live panel vs lines).
	IsTerminal bool
	// TermWidth is the terminal's width in columns (0: unknown, the display uses 100).
	TermWidth int
	// Interrupts delivers Ctrl-C / SIGTERM (nil in tests that do not interrupt).
	Interrupts <-chan os.Signal
	// Exit ends the process at once (second Ctrl-C); os.Exit in main.
	Exit func(code int)
	// Args are the command-line arguments as given (recorded, with secrets redacted, in
	// summary.json).
	Args []string
	// LookPath finds a program on PATH (exec.LookPath when nil); report --open uses it to find
	// the system's opener.
	LookPath func(file string) (string, error)
	// Executable is this program's path ("" when unknown): sweep --serve-cmd runs it as each
	// server's process-group keeper.
	Executable string

	// interrupted is set by the first interrupt (the command then ends with exit 130).
	interrupted atomic.Bool
	// flags are the running command's flags (recorded as run.config by the measuring commands).
	flags *pflag.FlagSet
	// noProgress and quiet are the running command's --no-progress and --quiet (quiet.go).
	noProgress, quiet bool
}

// commandFactories holds every subcommand's constructor; each command file registers its own in
// an init function so that commands can be added without touching this file.
var commandFactories = map[string]func(*App) *cobra.Command{}

func register(name string, f func(*App) *cobra.Command) { commandFactories[name] = f }

func newRootCmd(app *App) *cobra.Command {
	root := &cobra.Command{
		Use:   "llmbench",
		Short: "Load-test and benchmark LLM inference endpoints with numbers you can defend",
		Long: `llmbench replays real or synthetic traffic against any OpenAI-compatible endpoint, or
against its bundled reference engine, and reports TTFT, TPOT, inter-token latency, stalls,
P95/P99, goodput under SLOs and cost.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(app.Stdout)
	root.SetErr(app.Stderr)
	addProfileFlags(root)
	names := make([]string, 0, len(commandFactories))
	for n := range commandFactories {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		root.AddCommand(commandFactories[n](app))
	}
	addQuietFlags(root)
	return root
}

// exitError carries a specific exit code (see exitcodes.go); an error without one exits 2.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// execute runs the CLI with args and returns the process exit code.
func execute(ctx context.Context, app *App, args []string) int {
	app.Args = args
	errOut := app.Stderr // the error that ends the command is shown even under --quiet
	root := newRootCmd(app)
	if pre := root.PersistentPreRunE; pre != nil {
		root.PersistentPreRunE = func(c *cobra.Command, a []string) error {
			app.flags = c.Flags()
			app.applyQuiet(c.Flags())
			return pre(c, a)
		}
	}
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exitError); ok {
		if ee.err != nil {
			fmt.Fprintln(errOut, "llmbench:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(errOut, "llmbench:", err)
	return exitBadInput
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == usecase.KeeperArg {
		// A server's process-group keeper (sweep --serve-cmd): it handles its own signals.
		os.Exit(usecase.Keeper(os.Args[2:], os.Stderr))
	}
	if loadCommand(os.Args[1:]) {
		runtimeTuning(os.Getenv)
	} else if simulateCommand(os.Args[1:]) {
		simulateTuning(os.Getenv)
	}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	app := &App{
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		Getenv:     os.Getenv,
		IsTerminal: isTerminal(os.Stderr),
		TermWidth:  termWidth(os.Stderr),
		Interrupts: sig,
		Exit:       os.Exit,
		Executable: executable(),
	}
	os.Exit(execute(context.Background(), app, os.Args[1:]))
}

// executable is this program's path, "" when the system cannot say.
func executable() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}

// loadCommand reports whether args run a command that sends or serves requests over the
// network (run, ab, sweep, serve, bench): the ones runtimeTuning is for. simulate, by contrast,
// is CPU-bound; it gets only the collector's setting (simulateTuning).
func loadCommand(args []string) bool {
	for _, a := range args {
		if a == "help" {
			return false
		}
		if _, ok := commandFactories[a]; ok {
			switch a {
			case "run", "ab", "sweep", "serve", "bench":
				return true
			}
			return false
		}
	}
	return false
}

// runtimeTuning tunes the Go runtime for load generation, for settings the environment does
// not give. A load generator is bound by wake-up latency, not CPU or memory:
//
//   - GOMAXPROCS: twice the runtime's default (the CPUs, or a container's CPU limit). With one P
//     per CPU, a goroutine that became runnable (a token arrived, a send is due) waits for a P
//     while both run other work, up to Go's 10 ms preemption slice; with spare Ps the kernel
//     shares the CPUs at a finer grain. `llmbench bench` on 2 cores: token arrival error P99
//     1.1–2.2 ms with 2 Ps, 0.4–0.6 ms with 4, the client's CPU use alike. loadgen.CPUs (usecase.ClientCPUs) keeps
//     the CPU capacity for the client-CPU figures.
//   - The open files limit: raised to the hard limit, and the descriptor table reserved for
//     it (runner.ReserveFDTable: growing it later pauses the process for milliseconds).
//   - GOGC: 400. A run's live heap is small (the trace is read as it is replayed and records
//     go to disk: ≈ 20 MB), but every request allocates ≈ 10 KB in net/http, so at thousands of
//     requests per second the collector would run tens of times a second, and its pauses and
//     assists land in the schedule. `llmbench bench`, 2 cores: dispatch within 1 ms P99 at
//     6,000–9,000 req/s with GOGC=100, 13,000–15,000 with 400; a 1,000,000-request replay
//     stays under 150 MB either way.
func runtimeTuning(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(2 * usecase.ClientCPUs())
	}
	if getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	// Every stream in flight holds a file descriptor (two with the embedded engine): the
	// soft limit goes to the hard limit (issue 18; the run facts say what it was), and the
	// kernel's descriptor table is grown to it now, before the run, instead of doubling (and
	// stalling the process) as connections open.
	usecase.ReserveFileDescriptors()
}
