package runner

import (
	"context"
	"fmt"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/workloads"
)

// ColdStart makes a run start from a prefix cache that holds none of its prompts (run --cold,
// issue 45): a server that keeps prompts across requests (llama.cpp keeps them in host
// memory, vLLM and SGLang in their KV blocks until evicted) would otherwise serve a rerun of
// the same trace and seed from its cache, and its TTFT would be warm.
//
// Both ways are taken where they can be. Flush drops the server's cache by the backend's own
// endpoint (cacheflush.go: SGLang /flush_cache, vLLM /reset_prefix_cache with
// VLLM_SERVER_DEV_MODE=1, llama.cpp's slot erase with --slot-save-path); TGI, Ollama and
// hosted APIs offer none, and a llama.cpp slot erase does not empty the host-memory prompt
// cache (--cache-ram) a newer llama-server keeps beside its slots. Salt synthesizes the
// prompts with a salt (workloads.SaltedSeed): the same lengths and shared-prefix structure,
// text no earlier run with another salt sent, so no cache can hold it. The trace's requests
// that carry their own text are sent as they are; with no flush, the summary warns of them.
type ColdStart struct {
	// Flush drops the server's prefix cache before the run (and before priming).
	Flush bool
	// Salt is the prompts' salt; 0 leaves them as the seed makes them.
	Salt uint64
}

// startCold applies s.Cold (when set) to s: the salted seed and the run facts' cold block, after the
// flush; it returns the warnings for the summary. A flush the server does not offer is a note
// and, with requests the salt cannot change, a warning; a trace that cannot be read is an
// error.
func startCold(ctx context.Context, s *HTTPRun) ([]string, error) {
	c := s.Cold
	if c == nil {
		return nil, nil
	}
	if c.Salt != 0 {
		s.Load.Seed = workloads.SaltedSeed(s.Load.Seed, c.Salt)
		s.Info.PromptSalt = c.Salt
	}
	if !c.Flush {
		return nil, nil // --prompt-salt alone: the salt is the run's whole cold start
	}
	own, total, err := ownText(s.Trace)
	if err != nil {
		return nil, fmt.Errorf("cold start: %w", err)
	}
	cs := &metrics.ColdStart{Salt: c.Salt, OwnText: own, Requests: total}
	var warns []string
	fl, err := NewCacheFlush(ctx, s.Load.Target.URL, s.Load.Target.APIKey)
	switch {
	case err == nil:
		cs.Flushed = fl.Method
	case ctx.Err() != nil:
		return nil, ctx.Err()
	default:
		cs.FlushNote = err.Error()
	}
	if cs.Flushed == "" && own > 0 {
		warns = append(warns, fmt.Sprintf("cold start: %d of %d requests carry their own prompt text, which no salt changes, and the server's prefix cache was not flushed (%s): a server that saw them before may serve them warm",
			own, total, cs.FlushNote))
	}
	s.Info.Cold = cs
	return warns, nil
}

// prepareCache readies the server's prefix cache before a run: the cold start (its warnings for
// the summary), then the priming (prime.go), each when s asks for it.
func prepareCache(ctx context.Context, s *HTTPRun, sizing *sizingCache) (warns []string, pr *primed, err error) {
	if warns, err = startCold(ctx, s); err != nil {
		return nil, nil, err
	}
	if s.Prime != nil {
		if pr, err = primePrefixes(ctx, *s, sizing); err != nil {
			return nil, nil, err
		}
	}
	return warns, pr, nil
}

// coldProducer adds warns to what produce reports (the summary's warnings).
func coldProducer(produce Producer, warns []string) Producer {
	if len(warns) == 0 {
		return produce
	}
	return func(ctx context.Context, trace traces.Source, sink func(*metrics.Record)) (*Produced, error) {
		p, err := produce(ctx, trace, sink)
		if p != nil {
			p.Warnings = append(p.Warnings, warns...)
		}
		return p, err
	}
}
