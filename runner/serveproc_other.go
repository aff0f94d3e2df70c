//go:build !unix

package runner

import (
	"errors"
	"os/exec"
	"syscall"
)

// inProcessGroup: process groups are a Unix facility; sweep --serve-cmd needs one to stop a
// server and every process it started.
func inProcessGroup(*exec.Cmd) error {
	return errors.New("sweep --serve-cmd needs Unix process groups to stop each server; it is not supported on this platform")
}

func signalGroup(*exec.Cmd, syscall.Signal) error { return nil }

func groupAlive(*exec.Cmd) bool { return false }
