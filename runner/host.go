package runner

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// HostFacts describes the client machine.
func HostFacts() metrics.Host {
	h := metrics.Host{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	h.FDLimit = int(FDLimit())
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "model name") {
				if i := strings.IndexByte(line, ':'); i >= 0 {
					h.CPUModel = strings.TrimSpace(line[i+1:])
				}
				break
			}
		}
	}
	return h
}

// LoadAverage reads the 1-minute load average from /proc/loadavg (-1 where unavailable).
func LoadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// ProcessRSS is this process's resident set size in bytes, from /proc/self/status (0 where
// unavailable).
func ProcessRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
