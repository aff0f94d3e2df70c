//go:build !linux

package reaper

import (
	"fmt"
	"io"
	"os/exec"
	"syscall"
)

// Supported says whether the keeper works here: it needs Linux's parent-death signal and
// child subreaper. Elsewhere a server llmbench starts is stopped on every exit path llmbench
// itself sees, but not when llmbench is killed outright.
const Supported = false

// Start starts cmd (in a process group of its own where there are process groups); deathSig is
// not available here.
func Start(cmd *exec.Cmd, _ syscall.Signal) (*Proc, error) {
	if err := newGroup(cmd); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc{Cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Main refuses: the keeper needs Linux.
func Main(_ []string, stderr io.Writer) int {
	fmt.Fprintln(stderr, "llmbench: the process-group keeper needs Linux")
	return 2
}
