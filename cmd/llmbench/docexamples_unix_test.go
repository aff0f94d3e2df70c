//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runnableMarker is the HTML comment (invisible on GitHub) that marks the next ```sh block of
// README.md or docs/*.md as runnable: TestRunnableDocExamples runs it, with `llmbench` on
// PATH, in a fresh directory holding `traces` (the repository's), and expects exit N (default
// 0). Mark only quick examples: the embedded engine with --time-scale, or simulate.
var runnableMarker = regexp.MustCompile(`^<!-- runnable(?: exit=(\d+))? -->$`)

// docExample is one marked shell block.
type docExample struct {
	file   string // relative to the repository root
	line   int    // of the opening fence
	script string
	exit   int
}

// docExampleTimeout bounds each example; the marked ones take seconds.
const docExampleTimeout = 2 * time.Minute

// readDocExamples returns the marked blocks of one Markdown file; a marker that is not followed
// by a ```sh block, or a block never closed, is an error naming the line.
func readDocExamples(root, rel string) ([]docExample, error) {
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return nil, err
	}
	var out []docExample
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		m := runnableMarker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		ex := docExample{file: rel, line: i + 2}
		if m[1] != "" {
			ex.exit, _ = strconv.Atoi(m[1])
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```sh" {
			return nil, fmt.Errorf("%s:%d: the runnable marker is not followed by a ```sh block", rel, i+1)
		}
		var body []string
		j := i + 2
		for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
			body = append(body, lines[j])
		}
		if j == len(lines) {
			return nil, fmt.Errorf("%s:%d: the runnable block is never closed", rel, ex.line)
		}
		ex.script = strings.Join(body, "\n") + "\n"
		out = append(out, ex)
		i = j
	}
	return out, nil
}

// TestRunnableDocExamples runs every shell block of README.md and docs/*.md marked runnable, so
// that none goes stale: it builds llmbench once, runs each block with bash (-e, pipefail) in a
// temporary directory with a bounded time, and fails naming the file and line of the block.
func TestRunnableDocExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	var examples []docExample
	for _, f := range files {
		exs, err := readDocExamples(root, f)
		if err != nil {
			t.Fatal(err)
		}
		examples = append(examples, exs...)
	}
	if len(examples) == 0 {
		t.Fatal("no runnable examples found: the markers are gone")
	}
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "llmbench"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, ex := range examples {
		t.Run(fmt.Sprintf("%s:%d", ex.file, ex.line), func(t *testing.T) {
			runDocExample(t, bash, bin, root, ex)
		})
	}
}

// runDocExample runs one block in a fresh directory and checks its exit status.
func runDocExample(t *testing.T, bash, bin, root string, ex docExample) {
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(root, "traces"), filepath.Join(dir, "traces")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), docExampleTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-e", "-o", "pipefail", "-c", ex.script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"XDG_DATA_HOME="+filepath.Join(dir, "xdg"), "LLMBENCH_HISTORY_DB=")
	// The block's processes form a group, killed together at the timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if ctx.Err() != nil {
		t.Fatalf("%s:%d: still running after %v\n%s", ex.file, ex.line, docExampleTimeout, tail(out.String()))
	}
	if code != ex.exit {
		t.Fatalf("%s:%d: exit %d (%v), want %d\n%s", ex.file, ex.line, code, err, ex.exit, tail(out.String()))
	}
}

// tail is the last 40 lines of s.
func tail(s string) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}

// TestReadDocExamples: the marker takes the next ```sh block, with its exit status; a marker
// before anything else, or a block never closed, is an error naming the line.
func TestReadDocExamples(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ok.md", "# t\n\n<!-- runnable -->\n```sh\nllmbench version\n```\n\n```sh\nnot marked\n```\n<!-- runnable exit=1 -->\n```sh\nfalse\n```\n")
	write("loose.md", "<!-- runnable -->\n\n```sh\ntrue\n```\n")
	write("open.md", "<!-- runnable -->\n```sh\ntrue\n")
	exs, err := readDocExamples(dir, "ok.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []docExample{{file: "ok.md", line: 4, script: "llmbench version\n"}, {file: "ok.md", line: 12, script: "false\n", exit: 1}}
	if fmt.Sprint(exs) != fmt.Sprint(want) {
		t.Errorf("got %+v, want %+v", exs, want)
	}
	for name, line := range map[string]string{"loose.md": "loose.md:1:", "open.md": "open.md:2:"} {
		if _, err := readDocExamples(dir, name); err == nil || !strings.Contains(err.Error(), line) {
			t.Errorf("%s: error %v, want one naming %s", name, err, line)
		}
	}
}
