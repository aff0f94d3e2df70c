package reaper

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Arg is the first argument that makes llmbench run as the keeper (Main).
const Arg = "_reaper"

// Killed is the keeper's exit status when a descendant had to be killed with SIGKILL after the
// grace; after a stop that SIGTERM completed it exits 0.
const Killed = 137

// Command is the keeper, self (the llmbench executable) run as `self _reaper --grace grace --
// argv...`, which runs argv and stops all it started (see the package comment). Start it with
// Start.
func Command(self string, grace time.Duration, argv ...string) *exec.Cmd {
	return exec.Command(self, append([]string{Arg, "--grace", grace.String(), "--"}, argv...)...)
}

// parse reads the keeper's arguments: --grace D -- ARGV...
func parse(args []string) (time.Duration, []string, error) {
	if len(args) < 4 || args[0] != "--grace" || args[2] != "--" {
		return 0, nil, errors.New("usage: llmbench " + Arg + " --grace DURATION -- COMMAND [ARG...]")
	}
	grace, err := time.ParseDuration(args[1])
	if err != nil || grace <= 0 {
		return 0, nil, fmt.Errorf("--grace %q: want a positive duration", args[1])
	}
	if strings.TrimSpace(args[3]) == "" {
		return 0, nil, errors.New("no command to run")
	}
	return grace, args[3:], nil
}

// Proc is a started process: Exited is closed once it has been waited for, and Err is then
// its exit status (cmd.Wait's error).
type Proc struct {
	Cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// Exited is closed once the process has exited and been waited for.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Err is the process's exit status once Exited is closed (nil: exit 0).
func (p *Proc) Err() error {
	<-p.exited
	return p.err
}

// ExitCode is the exit status once Exited is closed (-1 when killed by a signal).
func (p *Proc) ExitCode() int {
	<-p.exited
	return p.Cmd.ProcessState.ExitCode()
}
