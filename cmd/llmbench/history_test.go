package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/pgtest"
	"github.com/llmbench/llmbench/internal/racebuild"
)

// TestHistoryNightly is the end-to-end nightly job: 30 nights of simulate with engine noise
// seeded differently each night, recorded with history add, against an SQLite file and a real
// PostgreSQL server. When speculative decoding is switched off from night 18, history check
// names night 18 and the changed flag and exits 1; the same 30 nights without the change exit
// 0. Nights 1-17 are shared by both histories.
func TestHistoryNightly(t *testing.T) {
	racebuild.Heavy(t)
	root := t.TempDir()
	simulate := func(name string, seed int, specK string) string {
		dir := filepath.Join(root, name)
		app := newTestApp(nil)
		if code := app.cli("simulate", "--trace", chatSmall, "--max-requests", "40", "--out", dir,
			"--engine-noise", "realistic", "--engine-seed", fmt.Sprint(seed), "--spec-k", specK); code != 0 {
			t.Fatalf("simulate %s: exit %d: %s", name, code, app.err.String())
		}
		return dir
	}
	var shared, changed, steady []string
	for night := 1; night <= 30; night++ {
		if night < 18 {
			shared = append(shared, simulate(fmt.Sprintf("night-%02d", night), night, "4"))
			continue
		}
		changed = append(changed, simulate(fmt.Sprintf("changed-night-%02d", night), night, "0"))
		steady = append(steady, simulate(fmt.Sprintf("steady-night-%02d", night), night, "4"))
	}
	stores := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "history.db") },
		"postgres": func(t *testing.T) string { return pgtest.DSN(t) },
	}
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			for _, tc := range []struct {
				name  string
				after []string
				code  int
			}{{"spec-decoding-off-at-night-18", changed, 1}, {"no-change", steady, 0}} {
				t.Run(tc.name, func(t *testing.T) {
					db := stores[backend](t)
					app := newTestApp(nil)
					args := append([]string{"history", "add", "--db", db, "--tag", "branch=main", "--revision", "nightly"}, shared...)
					if code := app.cli(append(args, tc.after...)...); code != 0 {
						t.Fatalf("history add: exit %d: %s", code, app.err.String())
					}
					// Each night keeps its own intervals (from its records).
					if m := regexp.MustCompile(`(\d+) with the run's own interval`).FindStringSubmatch(app.out.String()); m == nil || m[1] == "0" {
						t.Fatalf("history add recorded no within-run intervals:\n%s", app.out.String())
					}
					// Adding again records nothing new.
					again := newTestApp(nil)
					if code := again.cli("history", "add", "--db", db, "--tag", "branch=main", shared[0]); code != 0 ||
						!strings.Contains(again.out.String(), "already recorded: run 1") {
						t.Fatalf("history add again: exit %d: %s%s", code, again.out.String(), again.err.String())
					}
					check := newTestApp(nil)
					code := check.cli("history", "check", "--db", db, "--metric", "tpot.p95,max_gap.p99", "--where", "branch=main")
					out := check.out.String()
					if code != tc.code {
						t.Fatalf("history check: exit %d, want %d\n%s%s", code, tc.code, out, check.err.String())
					}
					if tc.code == 0 {
						if strings.Contains(out, "REGRESSION") {
							t.Errorf("no change, yet a regression is reported:\n%s", out)
						}
						return
					}
					for _, want := range []string{"REGRESSION at run 18", "changed-night-18", "engine.num_speculative_tokens 4 → 0", "each run's own standard error"} {
						if !strings.Contains(out, want) {
							t.Errorf("history check output lacks %q:\n%s", want, out)
						}
					}
					// JSON names the same run and flag.
					js := newTestApp(nil)
					if code := js.cli("history", "check", "--db", db, "--metric", "tpot.p95", "--format", "json"); code != 1 {
						t.Fatalf("history check --format json: exit %d: %s", code, js.err.String())
					}
					var res struct {
						Failed bool `json:"failed"`
						Series []struct {
							Changes []struct {
								RunID   int64  `json:"run_id"`
								Dir     string `json:"results_dir"`
								Kind    string `json:"kind"`
								Changed []struct{ Key, Before, After string }
							} `json:"changes"`
						} `json:"series"`
					}
					if err := json.Unmarshal([]byte(js.out.String()), &res); err != nil {
						t.Fatalf("history check --format json: %v\n%s", err, js.out.String())
					}
					if !res.Failed || len(res.Series) != 1 || len(res.Series[0].Changes) != 1 {
						t.Fatalf("json: %+v, want one failing change", res)
					}
					c := res.Series[0].Changes[0]
					if filepath.Base(c.Dir) != "changed-night-18" || c.Kind != "regression" || len(c.Changed) == 0 || c.Changed[0].Key != "engine.num_speculative_tokens" {
						t.Errorf("json change: %+v, want a regression at changed-night-18 naming engine.num_speculative_tokens", c)
					}
					// The change is before --since: reported, not failing.
					late := newTestApp(nil)
					if code := late.cli("history", "check", "--db", db, "--metric", "tpot.p95", "--since", "2999-01-01"); code != 0 {
						t.Errorf("history check --since 2999-01-01: exit %d, want 0\n%s", code, late.out.String())
					}
					// The trend report marks it.
					html := filepath.Join(t.TempDir(), "trend.html")
					rep := newTestApp(nil)
					if code := rep.cli("history", "report", "--db", db, "--metric", "tpot.p95", "-o", html); code != 0 {
						t.Fatalf("history report: exit %d: %s", code, rep.err.String())
					}
					page, err := os.ReadFile(html)
					if err != nil {
						t.Fatal(err)
					}
					for _, want := range []string{"change point (first run after)", "engine.num_speculative_tokens 4 → 0", "changed-night-18/report.html", "own 95% interval"} {
						if !strings.Contains(string(page), want) {
							t.Errorf("trend report lacks %q", want)
						}
					}
				})
			}
		})
	}
}

// TestHistoryBadInput: bad flags and missing runs exit 2 with a message that names the input.
func TestHistoryBadInput(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"history", "add", "--db", db, t.TempDir()}, "has no summary.json"},
		{[]string{"history", "add", "--db", db, "--tag", "oops", "x"}, "key=value"},
		{[]string{"history", "check", "--db", db}, "no runs"},
		{[]string{"history", "check", "--db", db, "--metric", "ttft.p77"}, "ttft.p77"},
		{[]string{"history", "check", "--db", db, "--since", "whenever"}, "--since"},
		{[]string{"history", "check", "--db", db, "--min-change", "lots"}, "--min-change"},
		{[]string{"history", "check", "--db", db, "--format", "xml"}, "--format"},
		{[]string{"history", "show", "--db", db, "42"}, "history list"},
		{[]string{"history", "report", "--db", db}, "-o FILE"},
	} {
		app := newTestApp(nil)
		code := app.cli(tc.args...)
		if code != 2 || !strings.Contains(app.err.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message containing %q", tc.args[1:], code, app.err.String(), tc.want)
		}
	}
}

// TestHistoryDefaultStore: without --db the store is $XDG_DATA_HOME/llmbench/history.db.
func TestHistoryDefaultStore(t *testing.T) {
	data := t.TempDir()
	app := newTestApp(map[string]string{"XDG_DATA_HOME": data})
	if code := app.cli("history", "list"); code != 0 {
		t.Fatalf("history list: exit %d: %s", code, app.err.String())
	}
	if _, err := os.Stat(filepath.Join(data, "llmbench", "history.db")); err != nil {
		t.Errorf("default store not created under $XDG_DATA_HOME: %v", err)
	}
	if !strings.Contains(app.out.String(), "0 runs") {
		t.Errorf("history list of an empty store: %q", app.out.String())
	}
	// $LLMBENCH_HISTORY_DB names the store when --db is not given.
	named := filepath.Join(t.TempDir(), "team.db")
	app = newTestApp(map[string]string{"XDG_DATA_HOME": data, "LLMBENCH_HISTORY_DB": named})
	if code := app.cli("history", "list"); code != 0 {
		t.Fatalf("history list: exit %d: %s", code, app.err.String())
	}
	if _, err := os.Stat(named); err != nil {
		t.Errorf("$LLMBENCH_HISTORY_DB not used: %v", err)
	}
}
