package main

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSimulateOverloadCLI times the whole `llmbench simulate` process, as a user runs it,
// on a million chat requests offered at about five times what two H200s serve (the engine
// falls behind at once, so nearly every request waits): the binary is built and the trace
// generated once, then each iteration runs
//
//	llmbench gen --preset chat --rate 200 --duration 5001s --max-requests 1000000 -o 1m.jsonl
//	llmbench simulate --trace 1m.jsonl --gpu h200 --tp 2
//
// and reports the process's wall time (ns/op), its CPU time (user + system, cpu-s/op) and its
// peak resident memory (peak-rss-MB, the kernel's maxrss). Targets on two cores: < 60 s and
// < 1 GB RSS (docs/performance.md has the figures and the machine's load when measured).
//
//	go test -run '^$' -bench SimulateOverloadCLI -benchtime 1x -timeout 30m ./cmd/llmbench
func BenchmarkSimulateOverloadCLI(b *testing.B) {
	if testing.Short() {
		b.Skip("simulates a million requests")
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "llmbench")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	trace := filepath.Join(dir, "1m.jsonl")
	if out, err := exec.Command(bin, "gen", "--preset", "chat", "--rate", "200", "--duration", "5001s",
		"--max-requests", "1000000", "-o", trace).CombinedOutput(); err != nil {
		b.Fatalf("gen: %v\n%s", err, out)
	}
	var cpu time.Duration
	var peak int64
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		cmd := exec.Command(bin, "simulate", "--trace", trace, "--gpu", "h200", "--tp", "2", "--quiet",
			"-o", filepath.Join(dir, "res", string(rune('a'+i%26))))
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("simulate: %v\n%s", err, out)
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = max(peak, ru.Maxrss) // kilobytes on Linux
		}
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(peak)/1024, "peak-rss-MB")
}
