//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
)

// maxRSSMB is a finished child's peak resident memory in MB (2^20 bytes) from its rusage:
// ru_maxrss is in kilobytes on Linux and the BSDs, in bytes on macOS. 0: unknown.
func maxRSSMB(ps *os.ProcessState) float64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return float64(ru.Maxrss) / (1 << 20)
	}
	return float64(ru.Maxrss) / (1 << 10)
}
