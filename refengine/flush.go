package refengine

import (
	"errors"
	"fmt"
	"net/http"
)

// Prefix-cache flush (issue 34): the reference engine serves the endpoints vLLM and SGLang
// drop their prefix cache with, so that `llmbench run --prime-prefixes` (runner/cacheflush.go)
// can start a measured window from a known cache on it as on them:
//
//   - POST /reset_prefix_cache (vLLM's development endpoint): 200 with an empty body when
//     done; 400 with a JSON error while requests are running (vLLM then fails the reset because
//     blocks are still held);
//   - POST /flush_cache (SGLang): 200 "Cache flushed." when done; 400 "Cache not flushed." while
//     requests are running, as SGLang answers.
//
// Only blocks no sequence holds are in the cache's free queue, so with nothing running every
// cached block is dropped.

// errFlushBusy is ResetPrefixCache's refusal while requests are running.
var errFlushBusy = errors.New("requests are running")

// ResetPrefixCache drops every cached prefix block of every pool and returns how many were
// dropped; it refuses (errFlushBusy, wrapped) while any request is queued, running or
// arriving, as vLLM and SGLang do.
func (e *Engine) ResetPrefixCache() (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n := len(e.incoming) + e.cl.running() + e.cl.waiting(); n > 0 || e.cl.busy() {
		return 0, fmt.Errorf("%w (%d): the prefix cache can be reset only when the engine is idle", errFlushBusy, n)
	}
	dropped := 0
	for _, p := range e.cl.pools {
		dropped += p.c.pool.dropCached()
	}
	return dropped, nil
}

// dropCached forgets the prefix held by every free cached block (each stays free) and
// returns how many it forgot. Blocks held by a sequence keep theirs.
func (p *blockPool) dropCached() int {
	n := 0
	for b := range p.ref {
		h := p.hash[b]
		if h == 0 || p.ref[b] > 0 {
			continue
		}
		p.cached.remove(h)
		p.hash[b] = 0
		// A free block without a hash is reused before any cached one: move it to the head.
		p.unlink(int32(b))
		p.pushHead(int32(b))
		n++
	}
	return n
}

func (e *Engine) handleResetPrefixCache(w http.ResponseWriter, _ *http.Request) {
	if _, err := e.ResetPrefixCache(); err != nil {
		writeError(w, &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", message: "prefix cache not reset: " + err.Error()})
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (e *Engine) handleFlushCache(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if _, err := e.ResetPrefixCache(); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "Cache not flushed: %v.\n", err)
		return
	}
	w.Write([]byte("Cache flushed.\n"))
}
