package main

import (
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// longRunning names the commands that can run for a while: they replay or simulate a trace,
// search over many simulations, measure the client or read every record of one or more runs.
// Each accepts --no-progress and --quiet (added by addQuietFlags where its own flags lack them),
// so that a script can pass both to any of them. The short commands (trace tools, gen, import,
// compare, report, history check/list/show, version, …) finish in a moment and print only what
// was asked for.
var longRunning = []string{"ab", "bench", "calibrate", "grade", "history add", "k8s run", "merge", "plan", "run", "simulate", "sweep"}

// ownProgress is the --no-progress usage of the commands added here that do show progress.
var ownProgress = map[string]string{
	"bench":   "print no progress lines (one per measured run or point) on stderr",
	"k8s run": "print no progress lines (the shards' states, a failed shard's reason and log tail) on stderr",
}

const (
	noProgressUsage = "show no progress display (this command has none of its own: accepted so that scripts can pass it to every long-running command)"
	quietUsage      = "print nothing on stderr but the error that ends the command: no progress display, status lines, notes or warnings (the results on stdout and in files are unchanged)"
)

// addQuietFlags gives every long-running command --no-progress and --quiet (-q).
func addQuietFlags(root *cobra.Command) {
	for _, path := range longRunning {
		c, _, err := root.Find(strings.Fields(path))
		if err != nil || c == root {
			continue // the flag audit test names a missing command
		}
		fs := c.Flags()
		if fs.Lookup("no-progress") == nil {
			usage := noProgressUsage
			if u, ok := ownProgress[path]; ok {
				usage = u
			}
			fs.Bool("no-progress", false, usage)
		}
		if fs.Lookup("quiet") == nil {
			fs.BoolP("quiet", "q", false, quietUsage)
		}
	}
}

// applyQuiet reads the running command's --no-progress and --quiet into app. Under --quiet the
// command's stderr becomes io.Discard; execute keeps the real one for the error that ends the
// command.
func (app *App) applyQuiet(fs *pflag.FlagSet) {
	app.noProgress = boolFlag(fs, "no-progress")
	if boolFlag(fs, "quiet") {
		app.quiet = true
		app.Stderr = io.Discard
	}
}

// showProgress reports whether a progress display (or progress lines) may be shown.
func (app *App) showProgress() bool { return !app.noProgress && !app.quiet }

func boolFlag(fs *pflag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Value.Type() == "bool" && f.Value.String() == "true"
}
