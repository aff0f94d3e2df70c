package refengine

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/tokenizer"
)

// Faults configures failure injection into the engine's HTTP responses. Each probability is
// drawn independently per request from Seed and the request's key (its X-Request-Id, else its
// arrival number), so a run with the same ids and seed fails the same requests the same way.
type Faults struct {
	ResetBefore float64 // reset the connection before any response header
	ResetMid    float64 // reset the connection mid-stream
	Stall       float64 // pause the stream once mid-stream for StallFor
	StallFor    time.Duration
	Status429   float64 // answer 429 with an OpenAI-style error body
	Status500   float64 // answer 500
	Status503   float64 // answer 503
	Malformed   float64 // send one SSE line that is not "data: …" mid-stream
	BadJSON     float64 // send one "data:" chunk whose JSON is truncated mid-stream
	NoDone      float64 // end the stream without "data: [DONE]"
	SlowHeaders float64 // hold the response headers back for SlowHeadersFor
	SlowFor     time.Duration
	EarlyEOS    float64 // stop generating early (finish_reason "stop") unless ignore_eos
	// ErrorMid ends the stream mid-way with an error object, framed as the wire personality's
	// server frames one.
	ErrorMid float64
	// OverloadQueue > 0 answers 429 to new requests while more than OverloadQueue requests
	// wait to be scheduled.
	OverloadQueue int
	Seed          uint64
	// From and Until schedule the faults: only requests arriving at simulated offsets in
	// [From, Until) are affected (Until 0: no end). They model an outage window.
	From, Until time.Duration
}

// faultSpec describes one key of the spec syntax.
type faultSpec struct {
	prob     func(*Faults) *float64
	dur      func(*Faults) *time.Duration
	defDur   time.Duration
	help     string
	intValue func(*Faults) *int
	seed     bool
	window   func(*Faults) *time.Duration
}

var faultKeys = map[string]faultSpec{
	"reset-before": {prob: func(f *Faults) *float64 { return &f.ResetBefore }, help: "reset before headers"},
	"reset-mid":    {prob: func(f *Faults) *float64 { return &f.ResetMid }, help: "reset mid-stream"},
	"stall": {prob: func(f *Faults) *float64 { return &f.Stall }, dur: func(f *Faults) *time.Duration { return &f.StallFor },
		defDur: 500 * time.Millisecond, help: "stall mid-stream, e.g. stall=0.1:500ms"},
	"status-429":   {prob: func(f *Faults) *float64 { return &f.Status429 }, help: "HTTP 429"},
	"status-500":   {prob: func(f *Faults) *float64 { return &f.Status500 }, help: "HTTP 500"},
	"status-503":   {prob: func(f *Faults) *float64 { return &f.Status503 }, help: "HTTP 503"},
	"malformed":    {prob: func(f *Faults) *float64 { return &f.Malformed }, help: "a data line that is not JSON (SSE framing itself cannot be malformed: unknown lines are ignored)"},
	"bad-json":     {prob: func(f *Faults) *float64 { return &f.BadJSON }, help: "invalid JSON in a chunk"},
	"no-done":      {prob: func(f *Faults) *float64 { return &f.NoDone }, help: "stream ends without [DONE]"},
	"slow-headers": {prob: func(f *Faults) *float64 { return &f.SlowHeaders }, dur: func(f *Faults) *time.Duration { return &f.SlowFor }, defDur: time.Second, help: "delay headers, e.g. slow-headers=0.1:2s"},
	"early-eos":    {prob: func(f *Faults) *float64 { return &f.EarlyEOS }, help: "stop early unless ignore_eos"},
	"error-mid":    {prob: func(f *Faults) *float64 { return &f.ErrorMid }, help: "an error object mid-stream, in the wire personality's framing"},
	"overload":     {intValue: func(f *Faults) *int { return &f.OverloadQueue }, help: "429 while more than N requests wait, e.g. overload=64"},
	"seed":         {seed: true, help: "seed of the fault draws"},
	"from":         {window: func(f *Faults) *time.Duration { return &f.From }, help: "inject only from this simulated time on, e.g. from=30s"},
	"until":        {window: func(f *Faults) *time.Duration { return &f.Until }, help: "inject only before this simulated time, e.g. until=40s"},
}

func faultKeyList() string {
	keys := make([]string, 0, len(faultKeys))
	for k := range faultKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// ParseFaults parses a spec such as "reset-mid=0.1,status-503=0.1,stall=0.1:500ms,
// malformed=0.05": comma-separated key=value items, where a probability is in [0, 1] and may
// carry ":duration" for stall and slow-headers; "overload=N" takes a queue length, "seed=N" a
// seed, and "from=30s" / "until=40s" a window of simulated arrival time outside which nothing
// is injected. An empty spec injects nothing.
func ParseFaults(spec string) (Faults, error) {
	var f Faults
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return f, nil
	}
	seen := map[string]bool{}
	for i, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return Faults{}, fmt.Errorf("faults %q: item %d is empty; separate items with single commas", spec, i+1)
		}
		key, val, ok := strings.Cut(item, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if !ok {
			return Faults{}, fmt.Errorf("faults: %q: want key=value (keys: %s)", item, faultKeyList())
		}
		fs, known := faultKeys[key]
		if !known {
			return Faults{}, fmt.Errorf("faults: unknown fault %q in %q; known faults: %s", key, item, faultKeyList())
		}
		if seen[key] {
			return Faults{}, fmt.Errorf("faults: %q is given twice", key)
		}
		seen[key] = true
		val = strings.TrimSpace(val)
		switch {
		case fs.seed:
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return Faults{}, fmt.Errorf("faults: seed=%q: want a non-negative integer", val)
			}
			f.Seed = n
		case fs.window != nil:
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 {
				return Faults{}, fmt.Errorf("faults: %s=%q: want a non-negative duration such as 30s (%s)", key, val, fs.help)
			}
			*fs.window(&f) = d
		case fs.intValue != nil:
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return Faults{}, fmt.Errorf("faults: %s=%q: want a queue length >= 1 (%s)", key, val, fs.help)
			}
			*fs.intValue(&f) = n
		default:
			ps, ds, hasDur := strings.Cut(val, ":")
			p, err := strconv.ParseFloat(strings.TrimSpace(ps), 64)
			if err != nil || math.IsNaN(p) || p < 0 || p > 1 {
				return Faults{}, fmt.Errorf("faults: %s=%q: the probability must be a number in [0, 1] (%s)", key, val, fs.help)
			}
			*fs.prob(&f) = p
			if hasDur && fs.dur == nil {
				return Faults{}, fmt.Errorf("faults: %s=%q: %s takes no duration", key, val, key)
			}
			if fs.dur != nil {
				d := fs.defDur
				if hasDur {
					d, err = time.ParseDuration(strings.TrimSpace(ds))
					if err != nil || d <= 0 {
						return Faults{}, fmt.Errorf("faults: %s=%q: the duration after ':' must be positive, like 500ms", key, val)
					}
				}
				if p == 0 {
					d = 0 // a fault that never fires has no duration (keeps String exact)
				}
				*fs.dur(&f) = d
			}
		}
	}
	if f.Until > 0 && f.Until <= f.From {
		return Faults{}, fmt.Errorf("faults: until=%v must be after from=%v", f.Until, f.From)
	}
	return f, nil
}

// String returns the spec that ParseFaults turns back into f ("" when nothing is injected).
func (f Faults) String() string {
	var parts []string
	add := func(k string, p float64, d time.Duration) {
		if p <= 0 {
			return
		}
		s := k + "=" + strconv.FormatFloat(p, 'g', -1, 64)
		if d > 0 {
			s += ":" + d.String()
		}
		parts = append(parts, s)
	}
	add("reset-before", f.ResetBefore, 0)
	add("reset-mid", f.ResetMid, 0)
	add("stall", f.Stall, f.StallFor)
	add("status-429", f.Status429, 0)
	add("status-500", f.Status500, 0)
	add("status-503", f.Status503, 0)
	add("malformed", f.Malformed, 0)
	add("bad-json", f.BadJSON, 0)
	add("no-done", f.NoDone, 0)
	add("slow-headers", f.SlowHeaders, f.SlowFor)
	add("early-eos", f.EarlyEOS, 0)
	add("error-mid", f.ErrorMid, 0)
	if f.OverloadQueue > 0 {
		parts = append(parts, "overload="+strconv.Itoa(f.OverloadQueue))
	}
	if f.Seed != 0 {
		parts = append(parts, "seed="+strconv.FormatUint(f.Seed, 10))
	}
	if f.From > 0 {
		parts = append(parts, "from="+f.From.String())
	}
	if f.Until > 0 {
		parts = append(parts, "until="+f.Until.String())
	}
	return strings.Join(parts, ",")
}

// faultPlan is what happens to one request.
type faultPlan struct {
	resetBefore bool
	status      int
	slowHeaders time.Duration
	midAt       float64 // fraction of the output after which mid-stream faults fire
	resetMid    bool
	stall       time.Duration
	malformed   bool
	badJSON     bool
	noDone      bool
	earlyEOS    bool
	eosDraw     float64
	errorMid    bool
}

func (p *faultPlan) midStream() bool {
	return p.resetMid || p.stall > 0 || p.malformed || p.badJSON || p.errorMid
}

// plan draws the faults of the request with key hash k arriving at simulated offset at.
func (f *Faults) plan(k uint64, at time.Duration) faultPlan {
	var p faultPlan
	if at < f.From || (f.Until > 0 && at >= f.Until) {
		return p
	}
	draw := func(i uint64) float64 {
		return float64(tokenizer.Mix(f.Seed^tokenizer.Mix(k^(i*0x9e3779b97f4a7c15)))>>11) / (1 << 53)
	}
	hit := func(prob float64, i uint64) bool { return prob > 0 && draw(i) < prob }
	p.resetBefore = hit(f.ResetBefore, 1)
	switch {
	case hit(f.Status429, 2):
		p.status = 429
	case hit(f.Status500, 3):
		p.status = 500
	case hit(f.Status503, 4):
		p.status = 503
	}
	if hit(f.SlowHeaders, 5) {
		p.slowHeaders = f.SlowFor
	}
	p.resetMid = hit(f.ResetMid, 6)
	if hit(f.Stall, 7) {
		p.stall = f.StallFor
	}
	p.malformed = hit(f.Malformed, 8)
	p.badJSON = hit(f.BadJSON, 9)
	p.noDone = hit(f.NoDone, 10)
	p.earlyEOS = hit(f.EarlyEOS, 11)
	p.midAt = draw(12)
	p.eosDraw = draw(13)
	p.errorMid = hit(f.ErrorMid, 14)
	return p
}

// target is the output length of a request under the plan: max tokens, or with an early-eos
// fault (and without ignore_eos) a length drawn uniformly from [max(minTokens, 1), maxTokens).
func (p *faultPlan) target(maxTokens, minTokens int, ignoreEOS bool) int {
	if p == nil || !p.earlyEOS || ignoreEOS || maxTokens <= minTokens+1 {
		return maxTokens
	}
	lo := max(minTokens, 1)
	return lo + int(p.eosDraw*float64(maxTokens-lo))
}

func (p *faultPlan) earlyEOSFor(r *request) bool {
	return p.target(r.maxTokens, r.minTokens, r.ignoreEOS) < r.maxTokens
}
