package traces

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
)

// Cancellations (issue 38): a request the client abandons, cancel_after_ms after sending it
// (FORMAT.md "Cancellations"). This file holds the field's name, bounds and codec, so that the
// shared tables of record.go and jsonl.go carry one line each for it.

// fCancelAfter is the trace field: milliseconds after the request is sent at which the client
// closes the stream.
const fCancelAfter = "cancel_after_ms"

// MaxCancelAfterMs bounds cancel_after_ms (MaxSeconds, in milliseconds).
const MaxCancelAfterMs = MaxSeconds * 1000

const reasonCancelAfter = "must be a number of milliseconds > 0 (the delay after sending at which the client cancels; leave the field out for a request that is not cancelled)"

// cancelField decodes cancel_after_ms into d.r.CancelAfter; ok is false for any other key.
func (d *recordDecoder) cancelField(m member) (why string, ok bool) {
	if m.key != fCancelAfter {
		return "", false
	}
	d.r.CancelAfter, why = cancelAfter(m.val)
	return why, true
}

// cancelAfter parses a cancel delay in milliseconds: a finite number > 0 and at most
// MaxCancelAfterMs, rounded to the nanosecond.
func cancelAfter(v any) (time.Duration, string) {
	n, ok := asNumber(v)
	if !ok || math.IsNaN(n.f) || n.f <= 0 {
		return 0, reasonCancelAfter + " (got " + describe(v) + ")"
	}
	if n.f > MaxCancelAfterMs {
		return 0, "must be at most " + strconv.Itoa(MaxCancelAfterMs) + " ms (365 days, the time cap of trace format v1) (got " + describe(v) + ")"
	}
	d, exact := exactMs(n.text)
	if !exact {
		d = time.Duration(math.Round(n.f * 1e6))
	}
	if d <= 0 {
		return 0, reasonCancelAfter + " (got " + describe(v) + ", under a nanosecond)"
	}
	return d, ""
}

// exactMs converts a plain decimal number of milliseconds "1234.5" (no sign, no exponent) to
// nanoseconds, rounding half up beyond six fractional digits, as exactSeconds does for seconds.
func exactMs(s string) (time.Duration, bool) {
	if s == "" || len(s) > 64 || strings.ContainsAny(s, "eE+-") {
		return 0, false
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" {
		intPart = "0"
	}
	ms, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil || ms > MaxCancelAfterMs {
		return 0, false
	}
	var ns int64
	for i := 0; i < len(frac); i++ {
		c := frac[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if i < 6 {
			ns = ns*10 + int64(c-'0')
		}
	}
	for i := len(frac); i < 6; i++ {
		ns *= 10
	}
	if len(frac) > 6 && frac[6] >= '5' {
		ns++
	}
	return time.Duration(ms)*time.Millisecond + time.Duration(ns), true
}

// cancelAfterMs is d as the exact decimal milliseconds WriteJSONL writes ("" for 0: no field).
func cancelAfterMs(d time.Duration) json.Number {
	if d <= 0 {
		return ""
	}
	s := strconv.FormatInt(int64(d/time.Millisecond), 10)
	if ns := int64(d % time.Millisecond); ns != 0 {
		s += "." + strings.TrimRight(strconv.FormatInt(ns+1e6, 10)[1:], "0")
	}
	return json.Number(s)
}
