package runner

import (
	"sort"
	"strings"
)

// volatileLeaves are configuration facts that a server draws anew for every process (or that
// describe a moment, not a configuration): two arms of identical configuration differ in
// them, so configuration diffs skip them. The key's last dotted segment is matched.
var volatileLeaves = map[string]string{
	"media_marker": "llama.cpp draws a random multimodal marker per process (GET /props)",
	"random_seed":  "SGLang draws a random seed per process unless --random-seed is given",
	"port":         "a listening port, not a configuration",
	"nccl_port":    "SGLang picks a free NCCL port per process",
	"pid":          "a process id",
	"created":      "a timestamp (vLLM and llama.cpp /v1/models stamp each answer)",
	"start_time":   "a timestamp",
	"started_at":   "a timestamp",
	"uptime":       "grows with the process",
	"uptime_s":     "grows with the process",
	"timestamp":    "a timestamp",
	"id_task":      "the task a llama.cpp slot is running",
	"is_sleeping":  "llama.cpp's sleep state, not a configuration",
}

// volatilePrefixes are subtrees of runtime state: SGLang's /get_server_info appends each
// scheduler's live numbers (throughput, memory use) under internal_states.
var volatilePrefixes = []string{"sglang.internal_states."}

// VolatileConfigKey reports whether a configuration fact (as FetchServerConfig names it, with
// or without the run facts' "engine." prefix) changes with every server process, and so is
// no difference between two arms.
func VolatileConfigKey(key string) bool {
	key = strings.TrimPrefix(key, "engine.")
	for _, p := range volatilePrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	leaf := key[strings.LastIndexByte(key, '.')+1:]
	_, ok := volatileLeaves[leaf]
	return ok
}

// DiffConfig lists the keys whose values differ between two configurations (a key missing on
// one side shows as ""), leaving out the facts that change per server process
// (VolatileConfigKey).
func DiffConfig(a, b map[string]string) []ConfigDiff {
	d, _ := diffConfig(a, b)
	return d
}

// diffConfig is DiffConfig that also returns the sorted keys that differed but were left out
// as per-process values.
func diffConfig(a, b map[string]string) (diffs []ConfigDiff, ignored []string) {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for k := range keys {
		if a[k] == b[k] {
			continue
		}
		if VolatileConfigKey(k) {
			ignored = append(ignored, k)
			continue
		}
		diffs = append(diffs, ConfigDiff{Key: k, A: a[k], B: b[k]})
	}
	sort.Slice(diffs, func(i, j int) bool { return diffs[i].Key < diffs[j].Key })
	sort.Strings(ignored)
	return diffs, ignored
}
