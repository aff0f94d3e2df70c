package traces

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// number is a decoded JSON or msgpack number with its original text.
type number struct {
	text  string
	f     float64
	i     int64
	isInt bool // the value is integral and fits in an int64
}

// asNumber accepts json.Number (JSON with UseNumber) and the Go number types msgpack decodes to.
func asNumber(v any) (number, bool) {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return number{text: s, f: float64(i), i: i, isInt: true}, true
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !isRangeErr(err) {
			return number{}, false
		}
		return fromFloat(s, f), true
	case int8:
		return fromInt(int64(x)), true
	case int16:
		return fromInt(int64(x)), true
	case int32:
		return fromInt(int64(x)), true
	case int64:
		return fromInt(x), true
	case int:
		return fromInt(int64(x)), true
	case uint8:
		return fromInt(int64(x)), true
	case uint16:
		return fromInt(int64(x)), true
	case uint32:
		return fromInt(int64(x)), true
	case uint64:
		if x > math.MaxInt64 {
			s := strconv.FormatUint(x, 10)
			return number{text: s, f: float64(x)}, true
		}
		return fromInt(int64(x)), true
	case float32:
		return fromFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), float64(x)), true
	case float64:
		return fromFloat(strconv.FormatFloat(x, 'g', -1, 64), x), true
	}
	return number{}, false
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func fromInt(i int64) number {
	return number{text: strconv.FormatInt(i, 10), f: float64(i), i: i, isInt: true}
}

func fromFloat(text string, f float64) number {
	n := number{text: text, f: f}
	// 2^63 is exactly representable; anything below it that is integral fits in an int64.
	if !math.IsNaN(f) && !math.IsInf(f, 0) && f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
		n.i = int64(f)
		n.isInt = true
	}
	return n
}

// intField parses an integer >= min. Integral floats such as 3.0 are accepted (spreadsheets
// and pandas write them); 2.5, strings and booleans are not.
func intField(v any, min int64, what string) (int64, string) {
	n, ok := asNumber(v)
	if !ok || !n.isInt || n.i < min {
		return 0, what + " (got " + describe(v) + ")"
	}
	return n.i, ""
}

// maxSeconds keeps a duration in seconds inside time.Duration's range with room to spare.
const maxSeconds = 9e9

// secondsField parses a finite number of seconds >= 0 into an exact duration. Plain decimals
// ("12.345678901") convert exactly; other spellings go through float64 and are rounded to the
// nearest nanosecond.
func secondsField(v any, what string) (time.Duration, string) {
	n, ok := asNumber(v)
	if !ok || math.IsNaN(n.f) || n.f < 0 || n.f > maxSeconds {
		return 0, what + " (got " + describe(v) + ")"
	}
	if d, ok := exactSeconds(n.text); ok {
		return d, ""
	}
	return time.Duration(math.Round(n.f * 1e9)), ""
}

// exactSeconds converts a plain decimal "123.456" (no sign, no exponent) to nanoseconds,
// rounding half up beyond nine fractional digits.
func exactSeconds(s string) (time.Duration, bool) {
	if s == "" || len(s) > 64 || strings.ContainsAny(s, "eE+-") {
		return 0, false
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" {
		intPart = "0"
	}
	sec, err := strconv.ParseInt(intPart, 10, 64)
	if err != nil || sec > maxSeconds {
		return 0, false
	}
	var ns int64
	for i := 0; i < 9; i++ {
		ns *= 10
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			ns += int64(c - '0')
		}
	}
	if len(frac) > 9 {
		for _, c := range frac[9:] {
			if c < '0' || c > '9' {
				return 0, false
			}
		}
		if frac[9] >= '5' {
			ns++
		}
	}
	return time.Duration(sec)*time.Second + time.Duration(ns), true
}

// formatSeconds writes d as an exact decimal number of seconds with no trailing zeros.
func formatSeconds(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	sec := int64(d / time.Second)
	ns := int64(d % time.Second)
	s := strconv.FormatInt(sec, 10)
	if ns != 0 {
		f := strconv.FormatInt(ns+1e9, 10)[1:] // nine digits with leading zeros
		s += "." + strings.TrimRight(f, "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}

// floatField parses a finite number >= 0.
func floatField(v any, what string) (float64, string) {
	n, ok := asNumber(v)
	if !ok || math.IsNaN(n.f) || math.IsInf(n.f, 0) || n.f < 0 {
		return 0, what + " (got " + describe(v) + ")"
	}
	return n.f, ""
}

// stringField parses a string; nonEmpty rejects "".
func stringField(v any, nonEmpty bool, what string) (string, string) {
	s, ok := v.(string)
	if ok && !utf8.ValidString(s) {
		return "", what + " (got a string that is not valid UTF-8)"
	}
	if !ok || (nonEmpty && s == "") {
		if ok {
			return "", what + " (got an empty string)"
		}
		return "", what + " (got " + describe(v) + ")"
	}
	return s, ""
}
