package workloads

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Dist is a distribution of non-negative integers (token counts, turns, milliseconds).
//
// Its text form, used by CLI flags and accepted in spec files, is KIND:key=value,...:
//
//	fixed:512                         always 512 (also just "512")
//	uniform:100-1500                  uniform integers in [100, 1500] (or uniform:min=100,max=1500)
//	normal:mean=500,sd=100            rounded normal
//	lognormal:mean=800,sd=600         rounded log-normal with this mean and standard deviation
//	zipf:s=1.2,min=1,max=4000         P(k) proportional to (k-min+1)^-s on [min, max]
//	empirical:trace.jsonl             resampled from a trace's lengths (the CLI loads the file)
//	empirical:values=12;40;40;300     resampled from the listed values
//
// Every kind also takes min= and max= (max 0 = none), which clamp the result; the default
// minimum is 0, and callers drawing token counts raise it to 1.
type Dist struct {
	Kind   string  `json:"kind"`
	Value  int     `json:"value,omitempty"`
	Mean   float64 `json:"mean,omitempty"`
	SD     float64 `json:"sd,omitempty"`
	S      float64 `json:"s,omitempty"`
	Min    int     `json:"min,omitempty"`
	Max    int     `json:"max,omitempty"`
	Values []int   `json:"values,omitempty"`
	// From names a trace whose lengths an empirical distribution resamples; Spec.ResolveEmpirical
	// fills Values from it.
	From string `json:"from,omitempty"`
}

// Dist kinds.
const (
	Fixed     = "fixed"
	Uniform   = "uniform"
	Normal    = "normal"
	LogNormal = "lognormal"
	Zipf      = "zipf"
	Empirical = "empirical"
)

// maxZipfRange bounds the table a zipf distribution precomputes.
const maxZipfRange = 1 << 20

// ParseDist parses the text form of a Dist (see Dist).
func ParseDist(s string) (Dist, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		return Dist{Kind: Fixed, Value: n}, Dist{Kind: Fixed, Value: n}.check()
	}
	kind, rest, _ := strings.Cut(s, ":")
	d := Dist{Kind: strings.ToLower(strings.TrimSpace(kind))}
	bad := func(format string, a ...any) (Dist, error) {
		return Dist{}, fmt.Errorf("distribution %q: %s (forms: fixed:N, uniform:A-B, normal:mean=M,sd=S, lognormal:mean=M,sd=S, zipf:s=S,min=A,max=B, empirical:FILE; each may add min=,max=)", s, fmt.Sprintf(format, a...))
	}
	switch d.Kind {
	case Fixed, Uniform, Normal, LogNormal, Zipf, Empirical:
	default:
		return bad("unknown kind %q", d.Kind)
	}
	rest = strings.TrimSpace(rest)
	if d.Kind == Empirical && rest != "" && !strings.HasPrefix(rest, "values=") && !strings.Contains(rest, "=") {
		d.From = rest
		return d, d.check()
	}
	for _, part := range strings.Split(rest, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, hasEq := strings.Cut(part, "=")
		if !hasEq {
			switch d.Kind {
			case Fixed:
				key, val = "value", part
			case Uniform:
				lo, hi, ok := strings.Cut(part, "-")
				if !ok {
					return bad("want uniform:MIN-MAX")
				}
				var err1, err2 error
				d.Min, err1 = strconv.Atoi(strings.TrimSpace(lo))
				d.Max, err2 = strconv.Atoi(strings.TrimSpace(hi))
				if err1 != nil || err2 != nil {
					return bad("range %q is not two integers", part)
				}
				continue
			default:
				return bad("%q is not key=value", part)
			}
		}
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		known, err := d.setParam(key, val)
		if !known {
			return bad("unknown parameter %q", key)
		}
		if err != nil {
			return bad("parameter %s=%q is not a number", key, val)
		}
	}
	if err := d.check(); err != nil {
		return Dist{}, err
	}
	return d, nil
}

// setParam sets one key=value parameter of the text form; known is false for an unknown key.
func (d *Dist) setParam(key, val string) (known bool, err error) {
	switch key {
	case "value":
		d.Value, err = strconv.Atoi(val)
	case "mean":
		d.Mean, err = strconv.ParseFloat(val, 64)
	case "sd":
		d.SD, err = strconv.ParseFloat(val, 64)
	case "s":
		d.S, err = strconv.ParseFloat(val, 64)
	case "min":
		d.Min, err = strconv.Atoi(val)
	case "max":
		d.Max, err = strconv.Atoi(val)
	case "values":
		for _, v := range strings.Split(val, ";") {
			n, e := strconv.Atoi(strings.TrimSpace(v))
			if e != nil {
				return true, e
			}
			d.Values = append(d.Values, n)
		}
	case "from":
		d.From = val
	default:
		return false, nil
	}
	return true, err
}

// String returns the text form, which ParseDist reads back.
func (d Dist) String() string {
	var p []string
	add := func(k string, v string) { p = append(p, k+"="+v) }
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	switch d.Kind {
	case Fixed:
		add("value", strconv.Itoa(d.Value))
	case Normal, LogNormal:
		add("mean", f(d.Mean))
		add("sd", f(d.SD))
	case Zipf:
		add("s", f(d.S))
	case Empirical:
		if d.From != "" && len(d.Values) == 0 && d.Min == 0 && d.Max == 0 {
			return d.Kind + ":" + d.From
		}
		if d.From != "" {
			add("from", d.From)
		}
		if len(d.Values) > 0 {
			vs := make([]string, len(d.Values))
			for i, v := range d.Values {
				vs[i] = strconv.Itoa(v)
			}
			add("values", strings.Join(vs, ";"))
		}
	}
	if d.Min != 0 {
		add("min", strconv.Itoa(d.Min))
	}
	if d.Max != 0 {
		add("max", strconv.Itoa(d.Max))
	}
	return d.Kind + ":" + strings.Join(p, ",")
}

// UnmarshalJSON accepts the object form or the text form as a JSON string.
func (d *Dist) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		p, err := ParseDist(s)
		if err != nil {
			return err
		}
		*d = p
		return nil
	}
	type plain Dist
	var p plain
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("distribution: %w", err)
	}
	*d = Dist(p)
	return d.check()
}

// MarshalJSON writes the text form, except for empirical value lists, which stay objects.
func (d Dist) MarshalJSON() ([]byte, error) {
	if d.Kind == Empirical && len(d.Values) > 0 {
		type plain Dist
		return json.Marshal(plain(d))
	}
	return json.Marshal(d.String())
}

// check validates parameters that do not need the whole spec.
func (d Dist) check() error {
	bad := func(msg string) error { return fmt.Errorf("distribution %s: %s", d.String(), msg) }
	if d.Min < 0 || d.Max < 0 {
		return bad("min and max must be >= 0")
	}
	if d.Max > 0 && d.Max < d.Min {
		return bad("max must be >= min")
	}
	switch d.Kind {
	case Fixed:
		if d.Value < 0 {
			return bad("value must be >= 0")
		}
	case Uniform:
		if d.Max <= 0 {
			return bad("uniform needs a range, e.g. uniform:100-1500")
		}
	case Normal:
		if !(d.SD >= 0) || math.IsInf(d.SD, 0) || math.IsNaN(d.Mean) || math.IsInf(d.Mean, 0) {
			return bad("normal needs a finite mean and sd >= 0")
		}
	case LogNormal:
		if !(d.Mean > 0) || !(d.SD >= 0) || math.IsInf(d.Mean, 0) || math.IsInf(d.SD, 0) {
			return bad("lognormal needs mean > 0 and sd >= 0")
		}
	case Zipf:
		if !(d.S > 0) || math.IsInf(d.S, 0) || d.Max <= 0 {
			return bad("zipf needs s > 0 and max > 0, e.g. zipf:s=1.2,min=1,max=4000")
		}
		if d.Max-d.Min >= maxZipfRange {
			return bad(fmt.Sprintf("zipf range must have fewer than %d values", maxZipfRange))
		}
	case Empirical:
		if strings.ContainsAny(d.From, ",=") {
			return bad("the trace file name must not contain ',' or '='")
		}
		for _, v := range d.Values {
			if v < 0 {
				return bad("empirical values must be >= 0")
			}
		}
	case "":
		return fmt.Errorf("distribution: missing kind (fixed, uniform, normal, lognormal, zipf or empirical)")
	default:
		return fmt.Errorf("distribution: unknown kind %q (fixed, uniform, normal, lognormal, zipf or empirical)", d.Kind)
	}
	return nil
}

// IsZero reports whether the distribution is unset.
func (d Dist) IsZero() bool { return d.Kind == "" }

// sampler draws from a Dist given a standard normal variate, so that two draws can be
// correlated through a Gaussian copula.
type sampler struct {
	d      Dist
	mu, sg float64 // lognormal parameters
	cdf    []float64
	sorted []int
}

func (d Dist) compile() (*sampler, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	s := &sampler{d: d}
	switch d.Kind {
	case LogNormal:
		s.sg = math.Sqrt(math.Log(1 + (d.SD*d.SD)/(d.Mean*d.Mean)))
		s.mu = math.Log(d.Mean) - s.sg*s.sg/2
	case Zipf:
		n := d.Max - d.Min + 1
		s.cdf = make([]float64, n)
		var sum float64
		for k := 0; k < n; k++ {
			sum += math.Pow(float64(k+1), -d.S)
			s.cdf[k] = sum
		}
		for k := range s.cdf {
			s.cdf[k] /= sum
		}
	case Empirical:
		if len(d.Values) == 0 {
			if d.From != "" {
				return nil, fmt.Errorf("distribution %s: values from %s were not loaded (Spec.ResolveEmpirical loads them)", d.String(), d.From)
			}
			return nil, fmt.Errorf("distribution %s: empirical needs values", d.String())
		}
		s.sorted = append([]int(nil), d.Values...)
		sort.Ints(s.sorted)
	}
	return s, nil
}

// at maps a standard normal variate z to a value.
func (s *sampler) at(z float64) int {
	d := s.d
	u := phi(z)
	var v float64
	switch d.Kind {
	case Fixed:
		v = float64(d.Value)
	case Uniform:
		n := d.Max - d.Min + 1
		v = float64(d.Min + min(int(u*float64(n)), n-1))
	case Normal:
		v = math.Round(d.Mean + d.SD*z)
	case LogNormal:
		v = math.Round(math.Exp(s.mu + s.sg*z))
	case Zipf:
		k := sort.SearchFloat64s(s.cdf, u)
		v = float64(d.Min + min(k, len(s.cdf)-1))
	case Empirical:
		v = float64(s.sorted[min(int(u*float64(len(s.sorted))), len(s.sorted)-1)])
	}
	if v < float64(d.Min) {
		v = float64(d.Min)
	}
	if d.Max > 0 && v > float64(d.Max) {
		v = float64(d.Max)
	}
	if v > math.MaxInt32 {
		v = math.MaxInt32
	}
	return int(v)
}
