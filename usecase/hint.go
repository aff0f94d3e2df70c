package usecase

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmbench/llmbench/runner"
)

// PrintCompareHint writes the one line after a run's results that says how to compare them
// with another run: with the newest other results in the same parent directory when there
// are any (the default results/<timestamp> directories sit side by side), else with a
// placeholder. It goes to stderr so that stdout stays the run's output.
func PrintCompareHint(env *Env, dir string) {
	fmt.Fprintln(env.Stderr, compareHint(dir))
}

func compareHint(dir string) string {
	if prev := previousResults(dir); prev != "" {
		return "compare with the previous run: llmbench compare " + shellQuote(prev) + " " + shellQuote(dir)
	}
	return "compare with another run: llmbench compare " + shellQuote(dir) + " OTHER_RESULTS_DIR"
}

// previousResults is the results directory beside dir whose summary.json was written last
// (ties broken by name), "" when there is none. Only dir's parent is read.
func previousResults(dir string) string {
	parent := filepath.Dir(filepath.Clean(dir))
	entries, err := os.ReadDir(parent)
	if err != nil {
		return ""
	}
	self := filepath.Base(filepath.Clean(dir))
	best, bestTime := "", time.Time{}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == self {
			continue
		}
		fi, err := os.Stat(filepath.Join(parent, e.Name(), runner.SummaryFile))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if t := fi.ModTime(); best == "" || t.After(bestTime) || (t.Equal(bestTime) && e.Name() > filepath.Base(best)) {
			best, bestTime = filepath.Join(parent, e.Name()), t
		}
	}
	return best
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain path characters.
func shellQuote(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./-:+@%=,", r)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
