//go:build unix

package runner

import "syscall"

// RaiseFDLimit raises the soft limit on open files (RLIMIT_NOFILE) to the hard limit and
// returns the limits then in force: every stream in flight holds a socket, and with the
// embedded engine two. (Go's runtime already raises it at start on Linux and macOS since
// Go 1.19; doing it here as well makes the figure known, and covers a limit lowered since.)
// It changes process state, so only the CLI calls it.
func RaiseFDLimit() (soft, hard uint64, err error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, 0, err
	}
	if l.Cur < l.Max {
		want := l
		want.Cur = want.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) == nil {
			l = want
		}
	}
	return uint64(l.Cur), uint64(l.Max), nil
}

// FDLimit is the soft limit on open files (0: unknown).
func FDLimit() uint64 {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
		return 0
	}
	return uint64(l.Cur)
}
