// Package hoststat reads what the machine's kernel says about the host: the CPU time a
// hypervisor gave to other machines (steal). Runs and bench report it beside their timing
// figures, which on a virtual machine include those stalls.
package hoststat

import (
	"os"
	"strconv"
	"strings"
)

// CPUTimes is the machine's CPU time so far from the first line of /proc/stat, in clock
// ticks summed over the CPUs: Total is every state (idle included), Steal the time the
// hypervisor ran something else while this machine's virtual CPUs wanted to run. On a
// virtual machine steal is the share of the benchmark's timing figures that no client can
// remove; Steal is 0 on bare metal and on kernels that do not count it.
type CPUTimes struct {
	Total, Steal uint64
}

// ReadCPUTimes reads CPUTimes (ok false where /proc/stat is unavailable or unreadable).
func ReadCPUTimes() (CPUTimes, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTimes{}, false
	}
	return parseCPUTimes(string(b))
}

// parseCPUTimes reads the aggregate "cpu" line: user nice system idle iowait irq softirq
// steal guest guest_nice. Guest time is already counted in user and nice, so Total sums the
// first eight.
func parseCPUTimes(stat string) (CPUTimes, bool) {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return CPUTimes{}, false
	}
	var t CPUTimes
	for i, f := range fields[1:min(len(fields), 9)] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return CPUTimes{}, false
		}
		t.Total += v
		if i == 7 {
			t.Steal = v
		}
	}
	return t, true
}

// Since starts measuring CPU steal: the function it returns gives the stolen share of
// the machine's CPU time since (-1: unknown, as where there is no /proc/stat).
func Since() func() float64 {
	a, ok := ReadCPUTimes()
	return func() float64 {
		b, ok2 := ReadCPUTimes()
		if !ok || !ok2 {
			return -1
		}
		return stealFraction(a, b)
	}
}

// stealFraction is the share of the CPU time from a to b that was stolen (-1 when no time
// passed or the counters went backwards).
func stealFraction(a, b CPUTimes) float64 {
	if b.Total <= a.Total || b.Steal < a.Steal {
		return -1
	}
	return float64(b.Steal-a.Steal) / float64(b.Total-a.Total)
}
