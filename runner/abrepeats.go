package runner

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/workloads"
)

// Independence says how an A/B keeps its repeats independent of the servers' prefix caches.
// Without either, every repeat sends the same prompts, and a server that caches prefixes
// serves repeat 2 from what repeat 1 computed: the repeats are then no independent runs and
// the between-run variance the intervals rest on is understated.
type Independence struct {
	// Salt synthesizes every repeat's prompts with a salt of its own (RepeatSalt): both arms
	// of one repeat send identical prompts, repeat r and r' do not; lengths and the
	// shared-prefix structure (hash ids) are the same in every repeat. Requests that carry
	// their own text in the trace are sent as they are.
	Salt bool
	// Flush drops each arm's server prefix cache before each of its measured runs (Arm.Flush).
	Flush bool
}

// IndependenceModes are the values ParseIndependence accepts.
var IndependenceModes = []string{"salt", "flush", "salt+flush", "off"}

// ParseIndependence reads a mode of IndependenceModes ("salt,flush" is "salt+flush").
func ParseIndependence(s string) (Independence, error) {
	switch strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), ",", "+") {
	case "salt":
		return Independence{Salt: true}, nil
	case "flush":
		return Independence{Flush: true}, nil
	case "salt+flush", "flush+salt":
		return Independence{Salt: true, Flush: true}, nil
	case "off", "none", "identical":
		return Independence{}, nil
	}
	return Independence{}, fmt.Errorf("%q: want one of %s", s, strings.Join(IndependenceModes, ", "))
}

// RepeatSalt is the prompt salt of repeat rep (1-based; 0 is the warm-up) of the ab invocation
// whose nonce is nonce: a 64-bit mix of the two (splitmix64's finalizer), never 0. The prompts
// of a repeat are a pure function of --seed, the nonce and the repeat, so an invocation given
// an earlier one's nonce (ab --salt-nonce) sends its prompts again, and one with a fresh nonce
// never meets them.
func RepeatSalt(nonce uint64, rep int) uint64 {
	x := nonce ^ (uint64(rep)+1)*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	if x == 0 {
		x = 1
	}
	return x
}

// measuredSalt is the salt of the measured runs of repeat rep: its own with Independence.Salt,
// else one salt for every repeat of the invocation (identical prompts in every repeat, new
// ones for every invocation).
func measuredSalt(ind Independence, nonce uint64, rep int) uint64 {
	if ind.Salt {
		return RepeatSalt(nonce, rep)
	}
	return RepeatSalt(nonce, 1)
}

// SaltedHTTPProducer is HTTPProducer whose synthesized prompts are salted: the prompt seed is
// workloads.SaltedSeed(lo.Seed, salt). It fills Arm.Salted.
// Use HTTPProducers for an arm, so that its salted and plain runs share one prompt sizing.
func SaltedHTTPProducer(lo loadgen.Options, timeScale float64) func(salt uint64) Producer {
	return newSizingCache(lo.Sizer).salted(lo, timeScale)
}

// salted is SaltedHTTPProducer over the cache c.
func (c *sizingCache) salted(lo loadgen.Options, timeScale float64) func(salt uint64) Producer {
	return func(salt uint64) Producer {
		o := lo
		o.Seed = workloads.SaltedSeed(lo.Seed, salt)
		return c.producer(o, timeScale)
	}
}

// describeIndependence checks that every arm can do what opts.Independence asks and says in
// words what the repeats will do; warn is set when some repeats may not be independent (it
// goes into the comparison's warnings, which every format shows).
func describeIndependence(opts ABOptions, arms []Arm) (desc, warn string, err error) {
	ind := opts.Independence
	var parts []string
	if ind.Salt {
		for _, a := range arms {
			if a.Salted == nil {
				return "", "", fmt.Errorf("arm %s cannot salt its prompts: use --independent-repeats flush or off", a.Name)
			}
		}
		own, total, err := ownText(opts.Trace)
		if err != nil {
			return "", "", err
		}
		s := fmt.Sprintf("prompts salted per repeat (salts from the invocation's nonce %d and the repeat number: ab --salt-nonce %d sends them again; same lengths and shared prefixes, identical on both arms of a repeat)", opts.SaltNonce, opts.SaltNonce)
		if own > 0 {
			s += fmt.Sprintf("; %d of %d requests carry their own text in the trace and repeat identically", own, total)
			if !ind.Flush {
				warn = fmt.Sprintf("%d of %d requests carry their own prompt text, sent identically in every repeat: a server's prefix cache may serve them from an earlier repeat (--independent-repeats salt+flush, where the servers allow it)", own, total)
			}
		}
		parts = append(parts, s)
	}
	if ind.Flush {
		var how []string
		for _, a := range arms {
			if a.Flush == nil {
				return "", "", fmt.Errorf("arm %s: its server offers no prefix-cache flush: use --independent-repeats salt or off", a.Name)
			}
			how = append(how, fmt.Sprintf("%s: %s", a.Name, a.FlushMethod))
		}
		parts = append(parts, "each server's prefix cache flushed before every measured run ("+strings.Join(how, ", ")+")")
	}
	if len(parts) == 0 {
		desc = fmt.Sprintf("identical prompts in every repeat (--independent-repeats off), salted with the invocation's nonce %d (ab --salt-nonce %d sends them again): a server's prefix cache may serve later repeats from earlier ones", opts.SaltNonce, opts.SaltNonce)
		return desc, "repeats are not independent: " + desc, nil
	}
	if !ind.Salt {
		parts = append(parts, fmt.Sprintf("identical prompts in every repeat, salted with the invocation's nonce %d (ab --salt-nonce %d sends them again)", opts.SaltNonce, opts.SaltNonce))
	}
	return strings.Join(parts, "; "), warn, nil
}

// ownText counts the requests of src that carry their own prompt text (prompt or messages),
// which salting leaves as they are.
func ownText(src traces.Source) (own, total int, err error) {
	count := func(q *traces.Request) {
		total++
		if q.Prompt != "" || len(q.Messages) > 0 {
			own++
		}
	}
	src.Sessions(func(_ int, q *traces.Request) { count(q) })
	err = src.Singles(func(_ int, q *traces.Request) error { count(q); return nil })
	return own, total, err
}

// saltedEquivalence redoes the output check of a comparison whose runs were salted
// (RunInfo.PromptSalt, ab's independent repeats): each base run against the candidate run of
// the same salt, which sent the same prompts (pairedEquivalence). salted is false when no run
// was salted or a run's facts cannot be read: the comparison's own check stands.
func saltedEquivalence(base, cand []string) (eq *metrics.Equivalence, warn string, salted bool) {
	salts := func(dirs []string) ([]uint64, bool) {
		out := make([]uint64, len(dirs))
		for i, d := range dirs {
			info, err := runInfoOf(d)
			if err != nil {
				return nil, false
			}
			out[i] = info.PromptSalt
			salted = salted || info.PromptSalt != 0
		}
		return out, true
	}
	bs, okb := salts(base)
	cs, okc := salts(cand)
	if !okb || !okc || !salted {
		return nil, "", false
	}
	var a, b []string
	used := make([]bool, len(cand))
	for i, s := range bs {
		for j, t := range cs {
			if !used[j] && s == t {
				used[j] = true
				a, b = append(a, base[i]), append(b, cand[j])
				break
			}
		}
	}
	if unpaired := len(base) + len(cand) - 2*len(a); unpaired > 0 {
		warn = fmt.Sprintf("%d of %d runs sent salted prompts no run of the other side sent (ab --independent-repeats salt): their outputs are not compared", unpaired, len(base)+len(cand))
	}
	eq, err := pairedEquivalence(a, b)
	if err != nil {
		return nil, fmt.Sprintf("outputs not compared: %v", err), true
	}
	return eq, warn, true
}

// maxMismatchIDs bounds Equivalence.MismatchIDs as metrics does.
const maxMismatchIDs = 20

// pairedEquivalence checks greedy outputs run against run: aDirs[r] with bDirs[r] (runs that
// sent the same salted prompts), per request id of the steady phase. With salted repeats the
// outputs of one arm differ between repeats by design, so the comparison's own check (every
// run of a side against every other) would flag every request.
func pairedEquivalence(aDirs, bDirs []string) (*metrics.Equivalence, error) {
	type seen struct{ compared, mismatched, hashed bool }
	ids := map[string]*seen{}
	for r := range min(len(aDirs), len(bDirs)) {
		a, err := outputHashes(aDirs[r])
		if err != nil {
			return nil, err
		}
		b, err := outputHashes(bDirs[r])
		if err != nil {
			return nil, err
		}
		for id, ha := range a {
			hb, ok := b[id]
			if !ok {
				continue
			}
			s := ids[id]
			if s == nil {
				s = &seen{}
				ids[id] = s
			}
			if ha == "" || hb == "" {
				continue
			}
			s.compared = true
			s.mismatched = s.mismatched || ha != hb || ha == mixedHashes
		}
	}
	eq := &metrics.Equivalence{}
	for id, s := range ids {
		switch {
		case !s.compared:
			eq.Unchecked++
		case s.mismatched:
			eq.Compared++
			eq.Mismatched++
			eq.MismatchIDs = append(eq.MismatchIDs, id)
		default:
			eq.Compared++
		}
	}
	sort.Strings(eq.MismatchIDs)
	eq.MismatchIDs = eq.MismatchIDs[:min(len(eq.MismatchIDs), maxMismatchIDs)]
	if eq.Compared == 0 {
		return nil, nil
	}
	return eq, nil
}

// mixedHashes marks an id whose records in one run disagree.
const mixedHashes = "\x00mixed"

// outputHashes maps each request id of a run's steady phase to its output hash ("" when it
// failed or carried none).
func outputHashes(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := metrics.FileSource(filepath.Join(dir, RecordsFile)).Each(func(r *metrics.Record) error {
		if r.Phase != metrics.PhaseSteady || r.ID == "" {
			return nil
		}
		h := ""
		if r.OK() {
			h = r.OutputHash
		}
		if prev, ok := out[r.ID]; ok && prev != h {
			h = mixedHashes
		}
		out[r.ID] = h
		return nil
	})
	if err != nil && !errors.Is(err, metrics.ErrTruncated) {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return out, nil
}
