//go:build !unix

package main

import "os"

// maxRSSMB is 0 (unknown) where the child's rusage is not available.
func maxRSSMB(*os.ProcessState) float64 { return 0 }
