package runner

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// groupAlive says whether any process of cmd's process group is left that has not exited:
// on Linux from /proc, so that a member that exited but that nobody reaped (a zombie, when the
// shell that started it is gone and no init process reaps) does not count.
func groupAlive(cmd *exec.Cmd) bool {
	if cmd.Process == nil {
		return false
	}
	pgid := strconv.Itoa(cmd.Process.Pid)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: let the bounded wait and SIGKILL settle it
	}
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		f := strings.Fields(rest)
		if len(f) >= 3 && f[2] == pgid && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}
