//go:build !unix

package runner

// RaiseFDLimit does nothing where there is no RLIMIT_NOFILE; the limits read 0 (unknown).
func RaiseFDLimit() (soft, hard uint64, err error) { return 0, 0, nil }

// FDLimit is 0 (unknown) where there is no RLIMIT_NOFILE.
func FDLimit() uint64 { return 0 }
