package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// addProfileFlags gives every command --cpuprofile and --memprofile, so that a slow or
// memory-hungry run can be profiled with go tool pprof without rebuilding.
func addProfileFlags(root *cobra.Command) {
	var cpu, mem string
	var cpuFile *os.File
	pf := root.PersistentFlags()
	pf.StringVar(&cpu, "cpuprofile", "", "write a CPU profile of the command to FILE (go tool pprof)")
	pf.StringVar(&mem, "memprofile", "", "write a heap profile taken at the end of the command to FILE")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if cpu == "" {
			return nil
		}
		f, err := os.Create(cpu)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		cpuFile = f
		return nil
	}
	root.PersistentPostRunE = func(*cobra.Command, []string) error {
		if cpuFile != nil {
			pprof.StopCPUProfile()
			if err := cpuFile.Close(); err != nil {
				return fmt.Errorf("--cpuprofile: %w", err)
			}
		}
		if mem != "" {
			f, err := os.Create(mem)
			if err != nil {
				return fmt.Errorf("--memprofile: %w", err)
			}
			runtime.GC()
			if err := pprof.WriteHeapProfile(f); err != nil {
				f.Close()
				return fmt.Errorf("--memprofile: %w", err)
			}
			return f.Close()
		}
		return nil
	}
}
