package main

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestRunHintAndReportOpen: after a run the hint on stderr says how to compare it (with a
// placeholder for the first run in a directory, with the previous run for the second);
// report --open runs the system's opener on the absolute path of report.html, and without an
// opener, or when it fails, prints the path and still succeeds; --open with a format other
// than html is refused.
func TestRunHintAndReportOpen(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in opener is a shell script")
	}
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second run")
	app := newTestApp(nil)
	runExpect(t, app, exitOK, "simulate", "--trace", chatSmall, "--out", first, "--max-requests", "20")
	if want := "compare with another run: llmbench compare " + first + " OTHER_RESULTS_DIR\n"; !strings.Contains(app.err.String(), want) {
		t.Errorf("first run's stderr lacks %q:\n%s", want, app.err.String())
	}
	if strings.Contains(app.out.String(), "llmbench compare") {
		t.Error("the hint went to stdout")
	}
	app = newTestApp(nil)
	runExpect(t, app, exitOK, "simulate", "--trace", chatSmall, "--out", second, "--max-requests", "20")
	if want := "compare with the previous run: llmbench compare " + first + " '" + second + "'\n"; !strings.Contains(app.err.String(), want) {
		t.Errorf("second run's stderr lacks %q:\n%s", want, app.err.String())
	}

	report := filepath.Join(second, "report.html")
	bin := t.TempDir()
	script := filepath.Join(bin, "xdg-open")
	argsFile := filepath.Join(bin, "args")
	body := "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + argsFile + "'\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	failing := filepath.Join(bin, "failing")
	if err := os.WriteFile(failing, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	look := func(path string) func(string) (string, error) {
		return func(name string) (string, error) {
			if name != openerFor(runtime.GOOS).name {
				return "", errors.New("unexpected look-up of " + name)
			}
			return path, nil
		}
	}

	app = newTestApp(nil)
	app.LookPath = look(script)
	runExpect(t, app, exitOK, "report", second, "--open")
	got, err := os.ReadFile(argsFile)
	if err != nil || string(got) != report+"\n" {
		t.Errorf("opener got %q (err %v), want the report's absolute path %q", got, err, report)
	}
	if !strings.Contains(app.err.String(), "opened "+report) {
		t.Errorf("stderr: %s", app.err.String())
	}

	app = newTestApp(nil)
	app.LookPath = func(string) (string, error) { return "", errors.New("not found") }
	runExpect(t, app, exitOK, "report", second, "--open")
	if want := "found to open a browser; open " + report; !strings.Contains(app.err.String(), want) {
		t.Errorf("without an opener stderr lacks %q:\n%s", want, app.err.String())
	}

	app = newTestApp(nil)
	app.LookPath = look(failing)
	runExpect(t, app, exitOK, "report", second, "--open")
	if want := "could not open the report (exit status 3); open " + report; !strings.Contains(app.err.String(), want) {
		t.Errorf("with a failing opener stderr lacks %q:\n%s", want, app.err.String())
	}

	app = newTestApp(nil)
	runExpect(t, app, exitBadInput, "report", second, "--open", "--format", "csv")
	if !strings.Contains(app.err.String(), "--open opens report.html") {
		t.Errorf("stderr: %s", app.err.String())
	}
}

// TestOpenerFor: the opener of each system.
func TestOpenerFor(t *testing.T) {
	for goos, want := range map[string]string{"linux": "xdg-open", "freebsd": "xdg-open", "darwin": "open", "windows": "cmd /c start "} {
		op := openerFor(goos)
		if got := strings.Join(append([]string{op.name}, op.args...), " "); got != want {
			t.Errorf("%s: %q, want %q", goos, got, want)
		}
	}
}
