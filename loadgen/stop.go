package loadgen

import (
	"context"
	"errors"
)

// ErrStopped is the cause a caller cancels a run's context with (context.WithCancelCause,
// wrapped with its reason) to stop the run early on purpose, as --stop-on-saturation does
// (runner/saturation.go): the requests in flight are cancelled at once, without
// Options.Grace, and recorded as metrics.KindCancelled with the cause as their Error; the
// requests not yet sent are outside the run (Result.Skipped, no record), and the run is not
// Interrupted.
var ErrStopped = errors.New("run stopped early")

// stoppedEarly says whether ctx was canceled with ErrStopped.
func stoppedEarly(ctx context.Context) bool { return errors.Is(context.Cause(ctx), ErrStopped) }
