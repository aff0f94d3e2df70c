package runner

import (
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/progress"
	"github.com/llmbench/llmbench/metrics"
)

// TestRunFailureAllCancelled: a run whose every request the client cancelled measured nothing,
// and says so in those words rather than as failures; one cancellation among successes is no
// run failure.
func TestRunFailureAllCancelled(t *testing.T) {
	all := &metrics.Summary{Requests: metrics.Requests{Total: 5, Cancelled: 5}}
	if got := RunFailure(all, 1); !strings.Contains(got, "5 of 5 were cancelled by the client") {
		t.Errorf("all cancelled: %q", got)
	}
	some := &metrics.Summary{Requests: metrics.Requests{Total: 5, Succeeded: 4, Cancelled: 1}}
	if got := RunFailure(some, 0.1); got != "" {
		t.Errorf("one cancelled of five: %q", got)
	}
}

// TestProgressKnowsCancelled: the progress line's name for a cancelled record is metrics'.
func TestProgressKnowsCancelled(t *testing.T) {
	if progress.CancelledKind != string(metrics.KindCancelled) {
		t.Fatalf("progress.CancelledKind %q, metrics.KindCancelled %q", progress.CancelledKind, metrics.KindCancelled)
	}
}
