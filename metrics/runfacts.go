package metrics

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// TraceFingerprint identifies a trace by what a replay of it depends on. Each component is
// an order-independent 128-bit hash over the requests (hex): the ids; each id with its arrival
// offset; each id with its input and output lengths; each id with its prompt or messages text.
// Digest combines them. Two traces with the same fingerprint replay the same requests at the
// same times.
type TraceFingerprint struct {
	Requests int    `json:"requests"`
	Digest   string `json:"digest"`
	IDs      string `json:"ids"`
	Arrivals string `json:"arrivals"`
	Lengths  string `json:"lengths"`
	Text     string `json:"text"`
}

// Short is the fingerprint as people read it: "96 requests, 3f2a…".
func (f *TraceFingerprint) Short() string {
	if f == nil {
		return "no fingerprint"
	}
	d := f.Digest
	if len(d) > 12 {
		d = d[:12]
	}
	return strconv.Itoa(f.Requests) + " requests, digest " + d
}

// Differences names the components in which f and g differ ("request count", "ids",
// "arrivals", "lengths", "text"); nil when they are equal.
func (f *TraceFingerprint) Differences(g *TraceFingerprint) []string {
	var out []string
	if f.Requests != g.Requests {
		out = append(out, fmt.Sprintf("request count (%d vs %d)", f.Requests, g.Requests))
	}
	for _, c := range []struct{ name, a, b string }{{"ids", f.IDs, g.IDs}, {"arrivals", f.Arrivals, g.Arrivals},
		{"lengths", f.Lengths, g.Lengths}, {"text", f.Text, g.Text}} {
		if c.a != c.b {
			out = append(out, c.name)
		}
	}
	if len(out) == 0 && f.Digest != g.Digest {
		out = append(out, "digest")
	}
	return out
}

// ConfigDifference is one configuration fact that differs between the sides of a comparison.
type ConfigDifference struct {
	Key  string `json:"key"`
	Base string `json:"base"`
	Cand string `json:"cand"`
}

// RunConfig flattens the configuration facts of a run into key → value, for listing the
// differences between two sides: llmbench version, trace (path and fingerprint), model,
// backend, API, endpoint, mode, seed, rate and time scale, tokenizer, the engine or server
// configuration seen (engine.*), every command setting (flag.*), and the machine (host.*).
func RunConfig(r *RunInfo) map[string]string {
	endpoint := r.Endpoint
	if strings.HasPrefix(endpoint, "embedded reference engine") {
		endpoint = "embedded reference engine" // its loopback port differs every run
	}
	m := map[string]string{
		"llmbench_version": r.Version, "trace": r.Trace, "model": r.Model, "backend": r.Backend, "api": r.API,
		"endpoint": endpoint, "mode": r.Mode, "seed": strconv.FormatInt(r.Seed, 10), "tokenizer": r.Tokenizer,
		"host.os": r.Host.OS, "host.arch": r.Host.Arch, "host.cpus": strconv.Itoa(r.Host.CPUs),
		"host.cpu_model": r.Host.CPUModel, "host.go_version": r.Host.GoVersion,
	}
	fmtF := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	if r.RateScale != 0 {
		m["rate_scale"] = fmtF(r.RateScale)
	}
	if r.TimeScale != 0 {
		m["time_scale"] = fmtF(r.TimeScale)
	}
	if r.Concurrency != 0 {
		m["concurrency"] = strconv.Itoa(r.Concurrency)
	}
	if r.MaxConcurrency != 0 {
		m["max_concurrency"] = strconv.Itoa(r.MaxConcurrency)
	}
	if f := r.TraceFingerprint; f != nil {
		m["trace.fingerprint"] = f.Digest
		m["trace.requests"] = strconv.Itoa(f.Requests)
	}
	for k, v := range r.Engine {
		m["engine."+k] = v
	}
	for k, v := range r.Config {
		m["flag."+k] = v
	}
	for k, v := range m {
		if v == "" {
			delete(m, k)
		}
	}
	return m
}

// DiffRunConfigs lists the keys whose values differ between two flattened configurations (a
// key missing on one side shows as ""), sorted by key. Keys in ignore are skipped.
func DiffRunConfigs(base, cand map[string]string, ignore ...string) []ConfigDifference {
	skip := map[string]bool{}
	for _, k := range ignore {
		skip[k] = true
	}
	keys := map[string]bool{}
	for k := range base {
		keys[k] = true
	}
	for k := range cand {
		keys[k] = true
	}
	var out []ConfigDifference
	for k := range keys {
		if skip[k] || base[k] == cand[k] {
			continue
		}
		out = append(out, ConfigDifference{Key: k, Base: base[k], Cand: cand[k]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// ConfigDiffText is one difference as a line: "engine.gpu: h100 → a100".
func ConfigDiffText(d ConfigDifference) string {
	show := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return strings.TrimSpace(s)
	}
	return d.Key + ": " + show(d.Base) + " → " + show(d.Cand)
}
