package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() { register("version", newVersionCmd) }

// commit is the source revision, set at build time with -ldflags "-X main.commit=..."; when it
// is not, versionInfo falls back to the VCS facts the Go toolchain stamps into the binary.
var commit = ""

// buildFacts are what `llmbench version` prints.
type buildFacts struct {
	Version, Commit, Time string
	Modified              bool
	GoVersion             string
}

// versionInfo combines the -ldflags values with the binary's build info (nil when the binary
// carries none, as under `go run` of older toolchains or in tests).
func versionInfo(bi *debug.BuildInfo) buildFacts {
	f := buildFacts{Version: version, Commit: commit, GoVersion: runtime.Version()}
	if bi == nil {
		return f
	}
	if f.Version == devVersion && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		f.Version = bi.Main.Version // go install module@version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if f.Commit == "" {
				f.Commit = s.Value
			}
		case "vcs.time":
			f.Time = s.Value
		case "vcs.modified":
			f.Modified = s.Value == "true" && commit == ""
		}
	}
	return f
}

func (f buildFacts) String() string {
	s := "llmbench " + f.Version
	c := f.Commit
	if c == "" {
		c = "unknown"
	}
	s += " (commit " + c
	if f.Modified {
		s += ", modified"
	}
	if f.Time != "" {
		s += ", " + f.Time
	}
	return s + ", " + f.GoVersion + ")"
}

func newVersionCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the source commit this binary was built from",
		Long: `Print the version and the commit this binary was built from. A release build stamps both:

  go build -trimpath -ldflags "-X main.version=v0.2.0 -X main.commit=$(git rev-parse HEAD)" ./cmd/llmbench

Without -ldflags the commit comes from the VCS information the Go toolchain records when it
builds inside a git checkout ("modified" when the tree had uncommitted changes).`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			bi, _ := debug.ReadBuildInfo()
			_, err := fmt.Fprintln(app.Stdout, versionInfo(bi))
			return err
		},
	}
}
