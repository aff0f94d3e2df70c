//go:build !linux

package loadgen

import "testing"

// fullBacklog is Linux's (phases_linux_test.go): elsewhere a full accept queue may refuse
// rather than drop a SYN, so the unreachable case is not tested.
func fullBacklog(*testing.T) string { return "" }
