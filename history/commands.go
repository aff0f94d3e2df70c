package history

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/reports"
)

// Env is what the history commands take from their process: output, environment and clock.
type Env struct {
	Stdout io.Writer
	// Getenv reads the environment (for the default store path).
	Getenv func(string) string
	// Now is the clock (for --since ages and added_at).
	Now func() time.Time
	// Version is llmbench's version (report footer).
	Version string
}

func (e Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// DBEnv names the environment variable that gives the store when --db is not given (so a CI
// job can keep a PostgreSQL password in a secret rather than on a command line).
const DBEnv = "LLMBENCH_HISTORY_DB"

// OpenDSN opens the store named by --db, else by $LLMBENCH_HISTORY_DB, else the default SQLite
// file.
func OpenDSN(ctx context.Context, env Env, db string) (*Store, error) {
	getenv := env.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if db == "" {
		db = strings.TrimSpace(getenv(DBEnv))
	}
	if db == "" {
		p, err := DefaultPath(getenv)
		if err != nil {
			return nil, err
		}
		db = p
	}
	return Open(ctx, db)
}

// AddArgs are the inputs of llmbench history add.
type AddArgs struct {
	DB       string
	Dirs     []string
	Tags     []string // k=v
	Revision string
}

// RunAdd records results directories and prints what it did with each.
func RunAdd(ctx context.Context, env Env, a AddArgs) error {
	if len(a.Dirs) == 0 {
		return fmt.Errorf("give one or more results directories")
	}
	tags, err := ParseTags(a.Tags)
	if err != nil {
		return fmt.Errorf("--tag: %w", err)
	}
	st, err := OpenDSN(ctx, env, a.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	added, err := st.Add(ctx, a.Dirs, AddOptions{Tags: tags, Revision: strings.TrimSpace(a.Revision), Now: env.Now})
	for _, x := range added {
		if x.IntervalsLeftOut != "" {
			fmt.Fprintf(env.Stdout, "note: %s: %s\n", clean(x.Dir), x.IntervalsLeftOut)
		}
		if x.New {
			fmt.Fprintf(env.Stdout, "added run %d from %s (%d metrics, %d with the run's own interval; hash %s)\n", x.ID, clean(x.Dir), x.Metrics, x.Intervals, x.Hash[:12])
		} else if x.Backfilled {
			fmt.Fprintf(env.Stdout, "already recorded: run %d from %s (hash %s); its own intervals were missing and are added (%d)\n", x.ID, clean(x.Dir), x.Hash[:12], x.Intervals)
		} else {
			fmt.Fprintf(env.Stdout, "already recorded: run %d from %s (hash %s); left as it is\n", x.ID, clean(x.Dir), x.Hash[:12])
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "store: %s\n", clean(st.Where()))
	return nil
}

// CheckArgs are the inputs of llmbench history check and history report.
type CheckArgs struct {
	DB        string
	Metrics   []string
	Where     []string // k=v
	MinChange string   // "3%", "0.03" or "0" (report every significant change); "" = default
	Since     string   // see ParseSince
	Format    string
	// Detect tunes the detection (zero values: defaults).
	Detect DetectOptions
}

func (a CheckArgs) options(env Env) (CheckOptions, error) {
	where, err := ParseTags(a.Where)
	if err != nil {
		return CheckOptions{}, fmt.Errorf("--where: %w", err)
	}
	minChange, err := ParseMinChange(a.MinChange)
	if err != nil {
		return CheckOptions{}, err
	}
	for _, lv := range []struct {
		name string
		v    float64
	}{{"--alpha", a.Detect.Alpha}, {"--weak-alpha", a.Detect.WeakAlpha}} {
		if lv.v < 0 || lv.v > 0.5 {
			return CheckOptions{}, fmt.Errorf("%s %g: give a significance level between 0 and 0.5, e.g. 0.01", lv.name, lv.v)
		}
	}
	since, err := ParseSince(a.Since, env.now())
	if err != nil {
		return CheckOptions{}, err
	}
	var metrics []string
	for _, m := range a.Metrics {
		for _, p := range strings.Split(m, ",") {
			if p = strings.TrimSpace(p); p != "" {
				if _, err := LookupMetric(p); err != nil {
					return CheckOptions{}, fmt.Errorf("--metric %s: %w", quote(p), err)
				}
				metrics = append(metrics, p)
			}
		}
	}
	return CheckOptions{Metrics: metrics, Filter: Filter{Where: where}, MinChange: minChange, Since: since, Detect: a.Detect}, nil
}

// ParseMinChange parses --min-change: a percentage ("3%") or a fraction ("0.03"); "0" reports
// every significant change; "" is DefaultMinChange.
func ParseMinChange(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultMinChange, nil
	}
	num, scale := s, 1.0
	if t, ok := strings.CutSuffix(s, "%"); ok {
		num, scale = t, 0.01
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || v*scale > 10 {
		return 0, fmt.Errorf("--min-change %s: give a percentage such as 3%% or a fraction such as 0.03", quote(s))
	}
	if v == 0 {
		return -1, nil
	}
	return v * scale, nil
}

// RunCheck finds the change points and writes them in a.Format; failed is true when a
// regression newer than --since was found.
func RunCheck(ctx context.Context, env Env, a CheckArgs) (failed bool, err error) {
	o, err := a.options(env)
	if err != nil {
		return false, err
	}
	switch a.Format {
	case "", "text", "markdown", "md", "json":
	default:
		return false, fmt.Errorf("--format %s: use text, markdown or json", quote(a.Format))
	}
	st, err := OpenDSN(ctx, env, a.DB)
	if err != nil {
		return false, err
	}
	defer st.Close()
	res, err := st.Check(ctx, o)
	if err != nil {
		return false, err
	}
	if err := WriteCheck(env.Stdout, res, a.Format); err != nil {
		return false, err
	}
	return res.Failed, nil
}

// ReportArgs are the inputs of llmbench history report.
type ReportArgs struct {
	CheckArgs
	Out       string
	EChartsJS string
}

// RunReport writes the trend page to a.Out.
func RunReport(ctx context.Context, env Env, a ReportArgs) error {
	if a.Out == "" {
		return fmt.Errorf("-o FILE is required (e.g. -o trend.html)")
	}
	o, err := a.options(env)
	if err != nil {
		return err
	}
	st, err := OpenDSN(ctx, env, a.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := st.Check(ctx, o)
	if err != nil {
		return err
	}
	outDir, err := filepath.Abs(filepath.Dir(a.Out))
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(outDir, ".trend-*.html")
	if err != nil {
		return fmt.Errorf("write %s: %w", a.Out, err)
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", a.Out, err)
	}
	err = WriteTrend(f, res, TrendOptions{OutDir: outDir, Version: env.Version,
		HTML: reports.HTMLOptions{EChartsJS: a.EChartsJS, Getenv: env.Getenv}})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(f.Name(), a.Out); err != nil {
		return fmt.Errorf("write %s: %w", a.Out, err)
	}
	fmt.Fprintf(env.Stdout, "trend report: %s (%d series, %d runs)\n", clean(a.Out), len(res.Series), res.Runs)
	return nil
}

// ListArgs are the inputs of llmbench history list.
type ListArgs struct {
	DB    string
	Where []string
	// Last keeps only the newest N runs (0: all).
	Last int
}

// RunList prints the recorded runs.
func RunList(ctx context.Context, env Env, a ListArgs) error {
	where, err := ParseTags(a.Where)
	if err != nil {
		return fmt.Errorf("--where: %w", err)
	}
	st, err := OpenDSN(ctx, env, a.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	runs, err := st.Runs(ctx, Filter{Where: where})
	if err != nil {
		return err
	}
	if a.Last > 0 && len(runs) > a.Last {
		runs = runs[len(runs)-a.Last:]
	}
	return WriteList(env.Stdout, runs)
}

// RunShow prints one run.
func RunShow(ctx context.Context, env Env, db, ref string) error {
	st, err := OpenDSN(ctx, env, db)
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := st.FindRun(ctx, ref)
	if err != nil {
		return err
	}
	return WriteShow(env.Stdout, r)
}
