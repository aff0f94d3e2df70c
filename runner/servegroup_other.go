//go:build unix && !linux

package runner

import (
	"os/exec"
	"syscall"
)

// groupAlive says whether any process of cmd's process group is left (an exited member not
// yet reaped counts until it is).
func groupAlive(cmd *exec.Cmd) bool {
	return cmd.Process != nil && syscall.Kill(-cmd.Process.Pid, 0) == nil
}
