package workloads

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/traces"
)

// Cancellations (issue 38, docs/cancellations.md): a seeded share of the generated requests
// carry cancel_after_ms, the delay after sending at which the client abandons them.

// CancelSpec makes a share of the requests cancelled by the client.
type CancelSpec struct {
	// Share is the fraction of requests (of every class, session turns included) that are
	// cancelled, in (0, 1].
	Share float64 `json:"share"`
	// DelayMS is the distribution of the delay after sending, in milliseconds (values below 1
	// are raised to 1).
	DelayMS Dist `json:"delay_ms"`
}

// ParseCancel parses gen's --cancel SHARE:DIST, e.g. "0.1:uniform:200-2000" (10% of the
// requests, cancelled 200 to 2000 ms after sending) or "0.25:lognormal:mean=800,sd=400"; DIST
// is any distribution of ParseDist.
func ParseCancel(s string) (*CancelSpec, error) {
	share, dist, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || strings.TrimSpace(dist) == "" {
		return nil, fmt.Errorf("cancel %q: want SHARE:DELAY-DISTRIBUTION in ms, e.g. 0.1:uniform:200-2000", s)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(share), 64)
	if err != nil {
		return nil, fmt.Errorf("cancel %q: the share %q is not a number (want a fraction in (0, 1], e.g. 0.1)", s, share)
	}
	d, err := ParseDist(dist)
	if err != nil {
		return nil, fmt.Errorf("cancel %q: delay: %w", s, err)
	}
	c := &CancelSpec{Share: f, DelayMS: d}
	return c, c.check()
}

// check validates a cancel spec.
func (c *CancelSpec) check() error {
	if !(c.Share > 0 && c.Share <= 1) {
		return fmt.Errorf("cancel share must be in (0, 1] (got %v)", c.Share)
	}
	if c.DelayMS.IsZero() {
		return fmt.Errorf("cancel delay_ms needs a distribution (e.g. uniform:200-2000)")
	}
	if err := c.DelayMS.check(); err != nil {
		return fmt.Errorf("cancel delay_ms: %w", err)
	}
	return nil
}

// String is the --cancel form of c.
func (c *CancelSpec) String() string {
	return strconv.FormatFloat(c.Share, 'f', -1, 64) + ":" + c.DelayMS.String()
}

// cancelStream numbers the random streams of the cancellation draws, one per request in
// arrival order, apart from every other draw: adding --cancel changes no arrival or length.
const cancelStream = 1 << 41

// applyCancel sets CancelAfter on a seeded share of reqs (in their final order), drawing
// request i's choice and delay from stream cancelStream+i of seed.
func applyCancel(c *CancelSpec, reqs []traces.Request, seed int64) error {
	if c == nil {
		return nil
	}
	s, err := c.DelayMS.compile()
	if err != nil {
		return fmt.Errorf("cancel delay_ms: %w", err)
	}
	for i := range reqs {
		r := newRNG(seed, cancelStream+uint64(i))
		u, z := r.float(), r.norm()
		if u < c.Share {
			ms := min(max(1, s.at(z)), traces.MaxCancelAfterMs)
			reqs[i].CancelAfter = time.Duration(ms) * time.Millisecond
		}
	}
	return nil
}
