package reaper

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Supported says whether the keeper works here (Linux: a parent-death signal and a child
// subreaper).
const Supported = true

// Start starts cmd as the leader of a new process group that gets deathSig when this process
// ends, however it ends (0: none). The child is forked from a goroutine locked to its OS thread
// until the child has been waited for, so that the signal follows the process, not a thread the
// runtime may retire.
func Start(cmd *exec.Cmd, deathSig syscall.Signal) (*Proc, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = deathSig
	p := &Proc{Cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// Main runs the keeper with args (--grace D -- ARGV...) and returns its exit status: Killed
// when a process had to be killed after the grace; else ARGV's when it ended before the keeper
// was told to stop (128+N for signal N: also when the signal that stops the group reached it
// first), 0 after a stop; 2 for bad arguments. Messages go to stderr (the
// server's log).
func Main(args []string, stderr io.Writer) int {
	grace, argv, err := parse(args)
	if err != nil {
		fmt.Fprintln(stderr, "llmbench:", err)
		return 2
	}
	runtime.LockOSThread() // the command's parent-death signal follows this thread
	parent := os.Getppid()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(stderr, "llmbench: cannot become the subreaper of the server's processes (%v): one that leaves its process group may outlive it\n", err)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintln(stderr, "llmbench:", err)
		return 127
	}
	child, err := os.StartProcess(path, argv, &os.ProcAttr{Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}})
	if err != nil {
		fmt.Fprintln(stderr, "llmbench:", err)
		return 127
	}
	k := &keeper{self: os.Getpid(), child: child.Pid, log: stderr}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case s := <-sigs:
			fmt.Fprintf(stderr, "llmbench: %v: stopping the server's processes\n", s)
			return k.stop(grace, 0)
		case <-tick.C:
			k.reap()
			switch {
			case k.exited:
				return k.stop(grace, k.status())
			case os.Getppid() != parent:
				fmt.Fprintln(stderr, "llmbench: llmbench has gone: stopping the server's processes")
				return k.stop(grace, 0)
			}
		}
	}
}

// keeper is the running keeper's state.
type keeper struct {
	self, child int
	exited      bool
	ws          syscall.WaitStatus
	log         io.Writer
}

// reap waits for every child that has exited (the command, and orphans re-parented here).
func (k *keeper) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err != nil || pid <= 0 {
			return
		}
		if pid == k.child {
			k.exited, k.ws = true, ws
		}
	}
}

// status is the command's exit status, 128+N when signal N ended it.
func (k *keeper) status() int {
	if k.ws.Signaled() {
		return 128 + int(k.ws.Signal())
	}
	return k.ws.ExitStatus()
}

// stop sends SIGTERM to every descendant, waits up to grace for them to exit, then sends
// SIGKILL until none is left; it returns code, or Killed when SIGKILL was needed.
func (k *keeper) stop(grace time.Duration, code int) int {
	if len(k.descendants()) == 0 {
		return code
	}
	k.signal(syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		k.reap()
		if len(k.descendants()) == 0 {
			return code
		}
		time.Sleep(20 * time.Millisecond) // polling /proc for processes to end
	}
	left := k.descendants()
	fmt.Fprintf(k.log, "llmbench: %d of the server's processes still run %s after SIGTERM: SIGKILL\n", len(left), grace)
	for until := time.Now().Add(10 * time.Second); len(left) > 0 && time.Now().Before(until); left = k.descendants() {
		k.signal(syscall.SIGKILL)
		time.Sleep(20 * time.Millisecond)
		k.reap()
	}
	return Killed
}

// signal sends sig to every descendant and to the keeper's process group (itself aside).
func (k *keeper) signal(sig syscall.Signal) {
	for _, pid := range k.descendants() {
		_ = syscall.Kill(pid, sig)
	}
}

// descendants are the live processes under the keeper (through /proc's parent links; the
// subreaper keeps orphans among them) and the other live members of its process group.
// Zombies, which only their parent's wait can remove, do not count.
func (k *keeper) descendants() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	type proc struct{ ppid, pgrp int }
	procs := map[int]proc{}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		procs[pid] = proc{ppid, pgrp}
		children[ppid] = append(children[ppid], pid)
	}
	seen := map[int]bool{k.self: true}
	var out []int
	queue := []int{k.self}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	for pid, p := range procs {
		if p.pgrp == k.self && !seen[pid] {
			out = append(out, pid)
		}
	}
	return out
}
