package metrics

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// Series is a per-bucket time series in which a bucket may have no value: a percentile of a
// bucket without samples is NaN in Go and null in JSON, never 0 (0 ms would read as a
// perfect latency). Comparisons with NaN are false, so `v > 0` skips gaps.
type Series []float64

// MarshalJSON writes NaN and ±Inf as null.
func (s Series) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	b := make([]byte, 0, 2+8*len(s))
	b = append(b, '[')
	for i, v := range s {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads null elements as NaN.
func (s *Series) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*s = nil
		return nil
	}
	var raw []*float64
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := make(Series, len(raw))
	for i, p := range raw {
		if p == nil {
			out[i] = math.NaN()
		} else {
			out[i] = *p
		}
	}
	*s = out
	return nil
}
