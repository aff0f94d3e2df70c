package calibrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/llmbench/llmbench/internal/safetext"
)

// What a server declares of its own limits (issue 45, item 2). `llmbench run` records the
// server's configuration endpoints in run.json's run.engine (runner.FetchServerConfig, one
// dotted key per JSON leaf): llama.cpp's /props and /slots, SGLang's /get_server_info, TGI's
// /info, vLLM's /v1/models, the reference engine's /version (or, for the embedded engine, its
// configuration unprefixed). A declared limit beats one inferred from the runs' timing;
// one that is absent, malformed or absurd is noted and the inferred one is used.

// RunFactsFile and SummaryFile are the files of a results directory whose run block holds
// the server's configuration facts (runner.RunFactsFile, runner.SummaryFile).
const (
	RunFactsFile = "run.json"
	SummaryFile  = "summary.json"
)

// CapFromDeclared is Result.CapSource for a cap the server declared; Result.CapDeclaredBy
// names the field.
const CapFromDeclared = "server's declaration"

// declaredKey is one configuration fact that may declare a limit.
type declaredKey struct {
	key  string // as runner.FetchServerConfig names it
	what string // the field and its endpoint, for messages
	// bound marks a limit on the requests in flight that bounds the running ones without
	// being the running cap itself (TGI refuses requests beyond max_concurrent_requests).
	bound bool
	// engine, when set, is the value "server.engine" (or "engine") must have for the key to
	// count: the reference engine's own facts.
	engine string
}

// refEngine is the reference engine's name in its /version facts.
const refEngine = "llmbench-refengine"

// Facts that declare the cap on running sequences, the token budget per step and the longest
// request, best first.
var (
	capKeys = []declaredKey{
		{key: "llamacpp.total_slots", what: "llama.cpp total_slots (GET /props)"},
		{key: "llamacpp.slots.count", what: "llama.cpp's slots (GET /slots)"},
		{key: "sglang.max_running_requests", what: "SGLang max_running_requests (GET /get_server_info)"},
		{key: "sglang.internal_states.0.max_running_requests", what: "SGLang max_running_requests (GET /get_server_info internal_states)"},
		{key: "tgi.max_batch_size", what: "TGI max_batch_size (GET /info)"},
		{key: "server.max_num_seqs", what: "the reference engine's max_num_seqs (GET /version)", engine: refEngine},
		{key: "max_num_seqs", what: "the embedded reference engine's max_num_seqs", engine: refEngine},
		{key: "tgi.max_concurrent_requests", what: "TGI max_concurrent_requests (GET /info)", bound: true},
	}
	budgetKeys = []declaredKey{
		{key: "sglang.chunked_prefill_size", what: "SGLang chunked_prefill_size (GET /get_server_info)"},
		{key: "server.max_num_batched_tokens", what: "the reference engine's max_num_batched_tokens (GET /version)", engine: refEngine},
		{key: "max_num_batched_tokens", what: "the embedded reference engine's max_num_batched_tokens", engine: refEngine},
	}
	lenKeys = []declaredKey{
		{key: "llamacpp.slots.n_ctx", what: "llama.cpp n_ctx per slot (GET /slots)"},
		{key: "llamacpp.default_generation_settings.n_ctx", what: "llama.cpp n_ctx per slot (GET /props)"},
		{key: "sglang.context_length", what: "SGLang context_length (GET /get_server_info)"},
		{key: "tgi.max_total_tokens", what: "TGI max_total_tokens (GET /info)"},
		{key: "server.max_model_len", what: "the reference engine's max_model_len (GET /version)", engine: refEngine},
		{key: "max_model_len", what: "the embedded reference engine's max_model_len", engine: refEngine},
	}
)

// declaredLimit is one limit a run's server declared: the value, the field it came from and
// whether it only bounds the limit.
type declaredLimit struct {
	n     int
	what  string
	bound bool
}

// declared is what the servers of the fitted runs declared; a zero limit was not declared
// (or not usably). notes say what was absent, malformed, absurd or disagreed.
type declared struct {
	seqs, budget, maxLen declaredLimit
	notes                []string
}

// Bounds of a usable declaration: beyond them a value is not a server's setting.
const (
	maxDeclaredCap    = maxCap    // running sequences
	maxDeclaredBudget = maxCap    // tokens per step
	maxDeclaredLen    = 1 << 24   // tokens per request (16,777,216)
	minDeclaredBudget = 16        // tokens per step: below this no server chunks
	declaredValueCut  = 40        // bytes of a malformed value quoted in a note
	declaredKeyPrefix = "engine." // how compare and history name run facts; accepted too
)

// runFacts reads the server's configuration facts of a results directory (run.json, else
// summary.json: their run.engine), or of the directory of a records file. It returns nil
// without error when the run has none (a vLLM result file, a directory without either file).
func runFacts(path string) (map[string]string, error) {
	dir := path
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		if filepath.Base(path) != RecordsFile {
			return nil, nil
		}
		dir = filepath.Dir(path)
	}
	for _, name := range []string{RunFactsFile, SummaryFile} {
		file := filepath.Join(dir, name)
		data, err := os.ReadFile(file)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return parseRunFacts(data, file)
	}
	return nil, nil
}

// parseRunFacts returns run.engine of a run.json or summary.json; file names it in errors.
func parseRunFacts(data []byte, file string) (map[string]string, error) {
	var doc struct {
		Run struct {
			Engine map[string]any `json:"engine"`
		} `json:"run"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: not valid JSON: %s", file, safetext.Escape(err.Error(), 200))
	}
	out := make(map[string]string, len(doc.Run.Engine))
	for k, v := range doc.Run.Engine {
		k = strings.TrimPrefix(k, declaredKeyPrefix)
		switch t := v.(type) {
		case string:
			out[k] = t
		case float64:
			out[k] = strconv.FormatFloat(t, 'f', -1, 64)
		case nil:
			out[k] = ""
		default:
			out[k] = fmt.Sprint(t)
		}
	}
	return out, nil
}

// pick returns the first usable limit of keys in facts within [lo, hi], with a note for
// each key present whose value is not usable and for two usable ones that disagree.
func pick(facts map[string]string, keys []declaredKey, lo, hi int, name string) (declaredLimit, []string) {
	var got declaredLimit
	var notes []string
	for _, k := range keys {
		raw, ok := facts[k.key]
		if !ok || (k.engine != "" && facts["server.engine"] != k.engine && facts["engine"] != k.engine) {
			continue
		}
		if raw == "" { // JSON null: the server leaves it to its own default
			continue
		}
		n, err := declaredInt(raw, lo, hi)
		if err != nil {
			notes = append(notes, fmt.Sprintf("the server declares %s = %s: %v; %s is inferred instead",
				k.what, safetext.Quote(raw, declaredValueCut), err, name))
			continue
		}
		switch {
		case got.n == 0:
			got = declaredLimit{n: n, what: k.what, bound: k.bound}
		case n != got.n && !k.bound && !got.bound:
			notes = append(notes, fmt.Sprintf("the server declares %s = %d but %s = %d: %d is used", got.what, got.n, k.what, n, got.n))
		}
	}
	return got, notes
}

// declaredInt reads a declared count: a whole number in [lo, hi].
func declaredInt(raw string, lo, hi int) (int, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	switch {
	case err != nil || math.IsNaN(f) || math.IsInf(f, 0):
		return 0, errors.New("not a number")
	case f != math.Trunc(f):
		return 0, errors.New("not a whole number")
	case f < float64(lo):
		return 0, fmt.Errorf("below %d, not a limit", lo)
	case f > float64(hi):
		return 0, fmt.Errorf("above %d, not a server's setting", hi)
	}
	return int(f), nil
}

// declaredLimits reads the limits one run's facts declare.
func declaredLimits(facts map[string]string) declared {
	var d declared
	var n []string
	d.seqs, n = pick(facts, capKeys, 1, maxDeclaredCap, "the cap on running sequences")
	d.notes = append(d.notes, n...)
	d.budget, n = pick(facts, budgetKeys, minDeclaredBudget, maxDeclaredBudget, "the token budget per step")
	d.notes = append(d.notes, n...)
	d.maxLen, n = pick(facts, withModelLens(facts), 2, maxDeclaredLen, "the longest request")
	d.notes = append(d.notes, n...)
	return d
}

// withModelLens is lenKeys and, after them, the max_model_len of the one model /v1/models
// lists (vLLM's; the key names the model: models.<id>.max_model_len).
func withModelLens(facts map[string]string) []declaredKey {
	var found []string
	for k := range facts {
		if strings.HasPrefix(k, "models.") && strings.HasSuffix(k, ".max_model_len") {
			found = append(found, k)
		}
	}
	if len(found) != 1 {
		return lenKeys
	}
	return append(append([]declaredKey(nil), lenKeys...), declaredKey{key: found[0], what: "max_model_len (GET /v1/models)"})
}

// declaredOf combines the declarations of the fitted runs (facts, one map per run, nil for a
// run without facts, paths naming them): a limit is used when every run that declares it
// declares the same; runs that disagree are noted and the limit is left to inference.
func declaredOf(facts []map[string]string, paths []string) declared {
	var out declared
	type seen struct {
		lim  declaredLimit
		path string
	}
	first := map[string]*seen{}
	conflict := map[string]bool{}
	for i, f := range facts {
		if f == nil {
			continue
		}
		d := declaredLimits(f)
		for _, n := range d.notes {
			out.notes = appendOnce(out.notes, n)
		}
		for name, lim := range map[string]declaredLimit{"seqs": d.seqs, "budget": d.budget, "maxLen": d.maxLen} {
			if lim.n == 0 {
				continue
			}
			s, ok := first[name]
			switch {
			case !ok:
				first[name] = &seen{lim, paths[i]}
			case s.lim.n != lim.n && !conflict[name]:
				conflict[name] = true
				out.notes = append(out.notes, fmt.Sprintf("the runs' servers declare different limits (%s = %d in %s, %d in %s): they are inferred instead",
					lim.what, s.lim.n, s.path, lim.n, paths[i]))
			}
		}
	}
	get := func(name string) declaredLimit {
		if s, ok := first[name]; ok && !conflict[name] {
			return s.lim
		}
		return declaredLimit{}
	}
	out.seqs, out.budget, out.maxLen = get("seqs"), get("budget"), get("maxLen")
	return out
}

func appendOnce(xs []string, s string) []string {
	for _, x := range xs {
		if x == s {
			return xs
		}
	}
	return append(xs, s)
}

// loadFacts reads the configuration facts of each path; a run whose facts cannot be read
// gets a note and none.
func loadFacts(paths []string) ([]map[string]string, []string) {
	facts := make([]map[string]string, len(paths))
	var notes []string
	for i, p := range paths {
		f, err := runFacts(p)
		if err != nil {
			notes = append(notes, fmt.Sprintf("no declared limits read: %s", safetext.Escape(err.Error(), 300)))
			continue
		}
		facts[i] = f
	}
	return facts, notes
}

// hasFacts reports whether any run recorded server facts at all.
func hasFacts(facts []map[string]string) bool {
	for _, f := range facts {
		if len(f) > 0 {
			return true
		}
	}
	return false
}

// capKeyList names the facts that declare a cap, for the note when none does.
func capKeyList() string {
	var s []string
	for _, k := range capKeys {
		if k.engine == "" {
			s = append(s, k.key)
		}
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}
