package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The tests of this file send real signals (SIGINT, SIGTERM, SIGKILL) to the real binary,
// built once per test binary, and look in /proc for what it left running.

var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// TestMain removes the binary the signal tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// llmbenchBinary builds cmd/llmbench once for the tests that signal it (skipped with -short).
func llmbenchBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and signals it; skipped in -short mode")
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "llmbench-signals-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "llmbench")
		if out, err := exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// child is a started llmbench process with its output.
type child struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
	err    error
}

func startBinary(t *testing.T, bin string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(bin, args...), out: &syncBuffer{}, exited: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	c.cmd.Env = append(os.Environ(), "LLMBENCH_HISTORY_DB=")
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			c.cmd.Process.Kill()
			<-c.exited
		}
	})
	return c
}

// waitExit waits (at most limit) for the child to exit and returns its status and how long
// after since it exited.
func (c *child) waitExit(t *testing.T, limit time.Duration, since time.Time) (int, time.Duration) {
	t.Helper()
	select {
	case <-c.exited:
	case <-time.After(limit):
		t.Fatalf("llmbench still runs %s after the signal; its output:\n%s", limit, c.out.String())
	}
	return c.cmd.ProcessState.ExitCode(), time.Since(since)
}

// waitOutput polls the child's output until it holds want (bounded).
func (c *child) waitOutput(t *testing.T, want string, limit time.Duration) {
	t.Helper()
	waitFor(t, limit, fmt.Sprintf("%q in llmbench's output", want), func() bool { return strings.Contains(c.out.String(), want) })
}

// procAlive says whether pid runs (a zombie does not), from /proc.
func procAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// procParent is pid's parent, from /proc (0 when gone).
func procParent(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// readPid polls for a pid file another process writes (bounded).
func readPid(t *testing.T, path string, limit time.Duration) int {
	t.Helper()
	var pid int
	waitFor(t, limit, path, func() bool {
		b, err := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// TestSweepServeCmdLeavesNoServer: `sweep --serve-cmd` is ended from outside while it sweeps a
// `llmbench serve` it started (whose shell also started a process that left the group with
// setsid): by SIGKILL, which no handler sees; by two SIGINTs (the forced "exiting now" path);
// by one SIGTERM (the graceful path). Each time every process of the server is gone within a
// bounded wait, polled in /proc, and so is the keeper.
func TestSweepServeCmdLeavesNoServer(t *testing.T) {
	bin := llmbenchBinary(t)
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid (util-linux) not installed")
	}
	trace, err := filepath.Abs(chatSmall)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		signals []syscall.Signal
		exit    int
		says    string
	}{
		{"SIGKILL", []syscall.Signal{syscall.SIGKILL}, -1, ""},
		{"SIGINT twice", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, exitInterrupted, "stopped by its keeper"},
		{"SIGTERM", []syscall.Signal{syscall.SIGTERM}, exitInterrupted, "server stopped by SIGTERM"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			serve := fmt.Sprintf("echo $$ > %[1]s/server.pid; setsid sleep 600 & echo $! > %[1]s/escaped.pid; exec %[2]s serve --addr 127.0.0.1:{port} --time-scale 20",
				dir, bin)
			sw := startBinary(t, bin, "sweep", "--trace", trace, "--slo", "ttft=2s", "--points", "5,10", "--min-duration", "60s",
				"--serve-cmd", serve, "--serve-stop-timeout", "5s", "--out", filepath.Join(dir, "out"), "--no-progress")
			server := readPid(t, filepath.Join(dir, "server.pid"), 60*time.Second)
			escaped := readPid(t, filepath.Join(dir, "escaped.pid"), 60*time.Second)
			keeper := procParent(server)
			sw.waitOutput(t, "sweep: starting", 30*time.Second)
			procs := map[string]int{"server": server, "escaped": escaped, "keeper": keeper}
			for name, pid := range procs {
				if pid == 0 || !procAlive(pid) {
					t.Fatalf("%s (pid %d) is not running before the signal", name, pid)
				}
			}
			sent := time.Now()
			for i, sig := range c.signals {
				if i > 0 {
					sw.waitOutput(t, "interrupt: ", 30*time.Second)
				}
				if err := sw.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
			}
			code, took := sw.waitExit(t, 60*time.Second, sent)
			if code != c.exit || !strings.Contains(sw.out.String(), c.says) {
				t.Fatalf("exit %d after %s, want %d and %q in:\n%s", code, took, c.exit, c.says, sw.out.String())
			}
			deadline := time.Now().Add(30 * time.Second)
			for name, pid := range procs {
				waitFor(t, time.Until(deadline), fmt.Sprintf("the %s (pid %d) to end", name, pid), func() bool { return !procAlive(pid) })
			}
			t.Logf("%s: llmbench exited %d %s after the signal; server, escaped process and keeper gone %s after it",
				c.name, code, took.Round(time.Millisecond), time.Since(sent).Round(time.Millisecond))
		})
	}
}

// TestK8sRunStopsOnSignalsAgainstASilentAPIServer: `k8s run` against an API server that never
// answers stops on the first SIGINT or SIGTERM within 10 s (the bar of issue 46), exit 130,
// saying that nothing was created.
func TestK8sRunStopsOnSignalsAgainstASilentAPIServer(t *testing.T) {
	bin := llmbenchBinary(t)
	asked := make(chan struct{}, 16)
	silent := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		io.Copy(io.Discard, r.Body) // then the server notices the client hang up
		<-r.Context().Done()        // never answers
	}))
	defer silent.Close()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeKubeconfig(t, kubeconfig, silent.URL)
	trace, _ := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "s", n: 4, spacing: time.Millisecond, in: 8, out: 2})
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			run := startBinary(t, bin, "k8s", "run", "--kubeconfig", kubeconfig, "--trace", trace, "--shards", "2",
				"--image", "registry.example/llmbench:test", "--endpoint", "http://vllm.example:8000", "--start-in", "1m")
			select {
			case <-asked:
			case <-run.exited:
				t.Fatalf("k8s run exited before asking the API server: %s", run.out.String())
			case <-time.After(60 * time.Second):
				t.Fatal("k8s run never asked the API server")
			}
			sent := time.Now()
			if err := run.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			code, took := run.waitExit(t, 10*time.Second, sent)
			if code != exitInterrupted || !strings.Contains(run.out.String(), "nothing was created") {
				t.Fatalf("exit %d, want 130; output:\n%s", code, run.out.String())
			}
			t.Logf("%s against a silent API server: exit %d %s after the signal", sig, code, took.Round(time.Millisecond))
		})
	}
}

// writeKubeconfig writes a kubeconfig whose current context is server, namespace bench.
func writeKubeconfig(t *testing.T, path, server string) {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: t}
contexts:
- name: c
  context: {cluster: c, user: u, namespace: bench}
current-context: c
`, server)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}
