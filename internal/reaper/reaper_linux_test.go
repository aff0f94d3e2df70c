package reaper

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets this test binary be the keeper (as llmbench's main does) and the parent a test
// kills outright (helperParent).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		os.Exit(Main(os.Args[2:], os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "helper-parent" {
		os.Exit(helperParent(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// serverScript is a stand-in server: a process in the group (sleep in the background), one
// that leaves it (setsid), and the shell itself waiting; each writes its pid to dir.
func serverScript(dir string) string {
	return fmt.Sprintf(`sleep 300 & echo $! > %[1]s/grouped.pid; setsid sleep 300 & echo $! > %[1]s/escaped.pid; echo $$ > %[1]s/shell.pid; wait`, dir)
}

// helperParent starts the keeper over serverScript, prints the keeper's pid and waits to be
// killed: it stands in for llmbench killed outright.
func helperParent(args []string) int {
	cmd := Command(os.Args[0], 2*time.Second, "/bin/sh", "-c", serverScript(args[0]))
	cmd.Stderr = os.Stderr
	p, err := Start(cmd, syscall.SIGTERM)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("keeper", p.Cmd.Process.Pid)
	<-p.Exited()
	return 0
}

// pids reads the pid files serverScript writes, waiting (bounded) for all three.
func pids(t *testing.T, dir string) map[string]int {
	t.Helper()
	out := map[string]int{}
	deadline := time.Now().Add(30 * time.Second)
	for _, name := range []string{"grouped", "escaped", "shell"} {
		for {
			b, err := os.ReadFile(filepath.Join(dir, name+".pid"))
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
				out[name] = pid
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s.pid not written", name)
			}
			time.Sleep(20 * time.Millisecond) // polling a file another process writes
		}
	}
	return out
}

// alive says whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// waitGone polls /proc until every pid has ended, failing after limit.
func waitGone(t *testing.T, limit time.Duration, procs map[string]int) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for name, pid := range procs {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("%s (pid %d) still runs %s later", name, pid, limit)
			}
			time.Sleep(20 * time.Millisecond) // polling /proc
		}
	}
}

func setsidOrSkip(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid (util-linux) not installed")
	}
}

// TestKeeperStopsEveryProcessOnSIGTERM: SIGTERM to the keeper's group (what sweep does to
// stop a server) ends the shell, its background job and the process that left the group
// (which a signal to the group alone would miss).
func TestKeeperStopsEveryProcessOnSIGTERM(t *testing.T) {
	setsidOrSkip(t)
	dir := t.TempDir()
	p, err := Start(Command(os.Args[0], 5*time.Second, "/bin/sh", "-c", serverScript(dir)), syscall.SIGTERM)
	if err != nil {
		t.Fatal(err)
	}
	procs := pids(t, dir)
	if err := syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// 0, or the shell's 143 when the keeper saw the shell end (of the same SIGTERM) before
	// its own signal: either way not Killed, the grace sufficed.
	if code := p.ExitCode(); code != 0 && code != 128+int(syscall.SIGTERM) {
		t.Fatalf("keeper exit %d", code)
	}
	waitGone(t, 10*time.Second, procs)
}

// TestKeeperKillsWhatIgnoresSIGTERM: a process that ignores SIGTERM is killed after the grace,
// and the keeper says so with its exit status.
func TestKeeperKillsWhatIgnoresSIGTERM(t *testing.T) {
	dir := t.TempDir()
	script := fmt.Sprintf(`trap '' TERM; echo $$ > %s/stubborn.pid; while :; do sleep 1; done`, dir)
	p, err := Start(Command(os.Args[0], 300*time.Millisecond, "/bin/sh", "-c", script), syscall.SIGTERM)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(30 * time.Second); pid == 0; {
		b, _ := os.ReadFile(filepath.Join(dir, "stubborn.pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if pid == 0 && time.Now().After(deadline) {
			t.Fatal("stubborn.pid not written")
		}
		time.Sleep(20 * time.Millisecond) // polling a file another process writes
	}
	syscall.Kill(p.Cmd.Process.Pid, syscall.SIGTERM)
	if code := p.ExitCode(); code != Killed {
		t.Fatalf("keeper exit %d, want %d", code, Killed)
	}
	waitGone(t, 10*time.Second, map[string]int{"stubborn": pid})
}

// TestKeeperStopsAllWhenItsParentIsKilled: the parent that started the keeper is killed with SIGKILL
// (no handler runs): the parent-death signal makes the keeper stop every process of the
// server, the one that left the group included.
func TestKeeperStopsAllWhenItsParentIsKilled(t *testing.T) {
	setsidOrSkip(t)
	dir := t.TempDir()
	parent := exec.Command(os.Args[0], "helper-parent", dir)
	parent.Stderr = os.Stderr
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "keeper ") {
		t.Fatalf("helper: %q %v", line, err)
	}
	keeper, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "keeper ")))
	procs := pids(t, dir)
	procs["keeper"] = keeper
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	parent.Wait()
	waitGone(t, 15*time.Second, procs)
}

// TestKeeperArguments: bad arguments are refused with exit 2; a command that exits by itself
// gives its status.
func TestKeeperArguments(t *testing.T) {
	for _, args := range [][]string{nil, {"--grace", "x", "--", "true"}, {"--grace", "1s", "true"}, {"--grace", "-1s", "--", "true"}} {
		if code := Main(args, &strings.Builder{}); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	p, err := Start(Command(os.Args[0], time.Second, "/bin/sh", "-c", "exit 7"), syscall.SIGTERM)
	if err != nil {
		t.Fatal(err)
	}
	if code := p.ExitCode(); code != 7 {
		t.Fatalf("exit %d, want the command's 7", code)
	}
}
