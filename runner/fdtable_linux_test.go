package runner

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// fdTableSize is the FDSize line of /proc/self/status: the slots of the descriptor table.
func fdTableSize(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "FDSize:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("FDSize %q: %v", v, err)
			}
			return n
		}
	}
	t.Skip("no FDSize in /proc/self/status")
	return 0
}

func openFDs(t *testing.T) []string {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// The table holds the reserved number of descriptors afterwards, and no descriptor is left
// open or replaced: a file opened before still reads.
func TestReserveFDTableGrowsTheTableAndLeavesNothingOpen(t *testing.T) {
	limit := FDLimit()
	if limit < 4096 {
		t.Skipf("open files limit %d is below the 4,096 this test reserves", limit)
	}
	f, err := os.CreateTemp(t.TempDir(), "fd")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("kept"); err != nil {
		t.Fatal(err)
	}
	n := uint64(4096)
	if fdTableSize(t) >= int(n) {
		n = uint64(fdTableSize(t)) * 2
		if n > limit || n > MaxFDTable {
			t.Skipf("the table already holds %d descriptors", fdTableSize(t))
		}
	}
	before := openFDs(t)
	if got := ReserveFDTable(n); got != n {
		t.Fatalf("ReserveFDTable(%d) = %d", n, got)
	}
	if size := fdTableSize(t); size < int(n) {
		t.Errorf("FDSize %d after reserving %d", size, n)
	}
	// ReadDir opens a descriptor of its own each time: compare the two listings, both taken
	// the same way.
	if after := openFDs(t); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("open descriptors changed: before %v, after %v", before, after)
	}
	b := make([]byte, 4)
	if _, err := f.ReadAt(b, 0); err != nil || string(b) != "kept" {
		t.Errorf("file opened before: %q, %v", b, err)
	}
}

// A request past the soft limit is cut to it, never an error or a descriptor over the limit.
func TestReserveFDTableStaysWithinTheLimit(t *testing.T) {
	limit := FDLimit()
	if limit == 0 {
		t.Skip("no open files limit")
	}
	got := ReserveFDTable(1 << 40)
	if got > limit || got > MaxFDTable {
		t.Errorf("ReserveFDTable(2^40) = %d, limit %d, MaxFDTable %d", got, limit, MaxFDTable)
	}
	if ReserveFDTable(1) != 0 {
		t.Error("ReserveFDTable(1) grew the table")
	}
}
