//go:build unix

package runner

import (
	"errors"
	"os/exec"
	"syscall"
)

// inProcessGroup makes cmd the leader of a process group of its own, so that stopping it
// reaches every process its shell started.
func inProcessGroup(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	return nil
}

// signalGroup sends sig to cmd's process group; a group already gone is not an error.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
