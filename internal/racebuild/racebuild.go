// Package racebuild tells tests whether they were built with the race detector, so the few
// that run many whole simulations or seeded statistical trials can leave the -race pass to
// .ci/run's second pass, which builds without it. It is for tests only.
package racebuild

import (
	"os"
	"testing"
)

// SecondPassEnv is set by .ci/run's second pass (the quiet pass): there heavy tests run
// whatever the build.
const SecondPassEnv = "LLMBENCH_QUIET_TESTS"

// Heavy marks a test of many seeded trials or whole simulations (false-alarm rates, power,
// detection quality, calibration fits, published anchors, memory of a million records): under
// the race detector such a test runs five to ten times slower, checks arithmetic rather than
// concurrency, and would be most of CI's time. A -race test binary skips it unless
// $LLMBENCH_QUIET_TESTS is set; .ci/run lists every test that calls Heavy and runs it in the
// second pass, without -race. A build without -race runs it as usual.
//
// A heavy test runs in parallel with the package's other parallel tests (t.Parallel): Go
// starts those only after the package's sequential tests have finished, so the second pass's
// wall-clock tests (quietMachine) still run alone, and then the heavy ones share the cores.
// A heavy test must therefore not use t.Setenv or change the process's state.
func Heavy(t *testing.T) {
	t.Helper()
	if Enabled && os.Getenv(SecondPassEnv) == "" {
		t.Skip("many trials or whole simulations: skipped under -race; .ci/run's second pass runs it without -race")
	}
	t.Parallel()
}
