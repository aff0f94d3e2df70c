package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
)

// opener is the command that opens a file in the desktop's default application (a browser,
// for report.html): open on macOS, start (through cmd) on Windows, xdg-open elsewhere.
type opener struct {
	// name is the program looked up on PATH, args go before the file.
	name string
	args []string
}

func openerFor(goos string) opener {
	switch goos {
	case "darwin":
		return opener{name: "open"}
	case "windows":
		// start is a cmd built-in; its first quoted argument is a window title, hence "".
		return opener{name: "cmd", args: []string{"/c", "start", ""}}
	}
	return opener{name: "xdg-open"}
}

// openInBrowser opens path with the system's opener and waits for the opener (not the browser)
// to return; Ctrl-C ends the wait. Without an opener on PATH, or when it fails, it prints the
// path to open by hand instead: the report is written either way, so this never fails the
// command.
func openInBrowser(ctx context.Context, app *App, path string) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	op := openerFor(runtime.GOOS)
	lookPath := app.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	bin, err := lookPath(op.name)
	if err != nil {
		fmt.Fprintf(app.Stderr, "no %s found to open a browser; open %s\n", op.name, path)
		return
	}
	cmd := exec.CommandContext(ctx, bin, append(op.args, path)...)
	cmd.Stdout, cmd.Stderr = app.Stderr, app.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(app.Stderr, "%s could not open the report (%v); open %s\n", op.name, err, path)
		return
	}
	fmt.Fprintf(app.Stderr, "opened %s with %s\n", path, op.name)
}
