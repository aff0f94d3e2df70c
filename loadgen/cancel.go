package loadgen

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/llmbench/llmbench/metrics"
)

// Cancellations (issue 38, docs/cancellations.md). A request is cancelled on purpose when its
// trace line says so (traces.Request.CancelAfter: the stream is closed that long after the
// request was sent) or when the run stops it while in flight (CancelInFlight). Either way the
// connection is closed, so the server sees the client go away, and the record gets
// metrics.KindCancelled with its partial timings and the tokens it received: an outcome of its
// own, never a failure.

// ErrCancelled is the cause every deliberate cancellation carries: errors.Is(cause,
// ErrCancelled) is how the client tells one from a timeout or an interrupt.
var ErrCancelled = errors.New("cancelled by the client")

// cancelCause is a deliberate cancellation with the reason the record's Error shows.
type cancelCause struct{ why string }

func (c *cancelCause) Error() string        { return c.why }
func (c *cancelCause) Is(target error) bool { return target == ErrCancelled }

// CancelInFlight cancels the requests running under the context that cancel belongs to (one
// request's, or a parent shared by many) as deliberate cancellations: each in-flight request
// closes its connection and is recorded as metrics.KindCancelled with Error set to why
// (ErrCancelled's text when why is empty), never as a failure. A run that stops early on
// purpose (a saturation stop) uses it for the requests it abandons.
func CancelInFlight(cancel context.CancelCauseFunc, why string) {
	if why == "" {
		why = ErrCancelled.Error()
	}
	cancel(&cancelCause{why: why})
}

// cancelledCause reports whether the context's cause is a deliberate cancellation, and its
// message.
func cancelledCause(cause error) (metrics.FailureKind, string, bool) {
	if cause == nil || !errors.Is(cause, ErrCancelled) {
		return "", "", false
	}
	return metrics.KindCancelled, cause.Error(), true
}

// armCancel arms the trace's cancel_after_ms on a request sent now: d after it the request is
// cancelled (nil when d is 0: the request is not cancelled). shown is the delay as the trace
// gave it (d is rescaled under the embedded engine's time scale).
func armCancel(d, shown time.Duration, cancel context.CancelCauseFunc) *time.Timer {
	if d <= 0 {
		return nil
	}
	why := "cancelled by the client " + strconv.FormatFloat(float64(shown)/1e6, 'f', -1, 64) + " ms after sending (cancel_after_ms)"
	return time.AfterFunc(d, func() { CancelInFlight(cancel, why) })
}

// scaleCancel is the trace's delay d divided by scale (Options.CancelScale; 0 or 1: as is).
func scaleCancel(d time.Duration, scale float64) time.Duration {
	if d <= 0 || scale <= 0 || scale == 1 {
		return d
	}
	return max(1, time.Duration(float64(d)/scale))
}
