package workloads

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// Quality probes (issue 17): generators of graded chat requests whose answers are planted in
// the prompt, so that a response can be checked with the trace's expect list. The planted
// text follows the conventions the reference engine reads (refengine's package doc,
// "Answers"), so the whole pipeline runs without a GPU; against a real model the probes are
// ordinary tasks:
//
//   - long-context-probe: a document of filler text with three facts ("The order number for
//     customer Okafor is ORD-48213.") near its beginning (depth 0.1), middle (0.5) and end
//     (0.9), and a question about one of them ("What is the order number for customer
//     Okafor?"); expect: the answer contains the order number. Class "lc-<length>k/<position>"
//     (position begin, middle or end), so results break down by context length and by
//     position. Lengths default to 1k, 4k, 16k and 32k tokens.
//   - tool-calling: the 20 tools of ProbeTools (nested object, array, enum, integer, number
//     and boolean parameters) offered with every request; single-step tasks (class
//     tool/first: first-round success), a retry after an error message about a wrong
//     parameter name (tool/retry: retry success), and two-step tasks whose second call needs
//     a value from the first call's result (tool/step1, tool/step2); expect: a tool_call of
//     the right function, and one with the right arguments (a parameter-name mismatch fails
//     it as an extra field).
//   - json-output: an invoice to extract into the fixed schema ProbeInvoiceSchema with
//     response_format json_schema; expect: the schema and the invoice number.
//
// Facts are "- label: value" lines whose labels are the parameters' descriptions.
// Temperatures (a sweep) repeat each probe at every temperature, Samples times with seeds
// 1..Samples, with "/t=<T>" appended to the class, so stability can be read per temperature.

// ProbePresets are the names of the probe generators.
var ProbePresets = []string{"long-context-probe", "tool-calling", "json-output"}

// IsProbePreset reports whether name is a probe generator.
func IsProbePreset(name string) bool { return slices.Contains(ProbePresets, name) }

// ProbeSpec configures GenerateProbes.
type ProbeSpec struct {
	// Preset is one of ProbePresets.
	Preset string
	// Seed seeds arrivals and the planted values.
	Seed int64
	// Arrival and Duration give the arrival times, as for Spec; every arrival is one probe.
	Arrival  ArrivalSpec
	Duration time.Duration
	// MaxRequests keeps at most this many requests (0: all).
	MaxRequests int
	// Lengths are the long-context document lengths in tokens (nil: 1024, 4096, 16384,
	// 32768).
	Lengths []int
	// Temperatures are the sampling temperatures of a sweep (nil: greedy, 0 only); Samples
	// the requests per probe and temperature (0: 1), seeded 1..Samples.
	Temperatures []float64
	Samples      int
}

// DefaultProbeLengths are the long-context-probe document lengths.
var DefaultProbeLengths = []int{1024, 4096, 16384, 32768}

// GenerateProbes produces a probe trace: ids r1, r2, ... in arrival order, each a chat
// request with its expect checks. It is a pure function of p.
func GenerateProbes(p ProbeSpec) ([]traces.Request, error) {
	if !IsProbePreset(p.Preset) {
		return nil, fmt.Errorf("probe preset %q: want one of %s", p.Preset, strings.Join(ProbePresets, ", "))
	}
	lengths := p.Lengths
	if lengths == nil {
		lengths = DefaultProbeLengths
	}
	for _, n := range lengths {
		if n < 256 || n > 262144 {
			return nil, fmt.Errorf("probe length %d: want 256 to 262144 tokens", n)
		}
	}
	temps := p.Temperatures
	if temps == nil {
		temps = []float64{0}
	}
	for _, t := range temps {
		if !(t >= 0 && t <= 2) {
			return nil, fmt.Errorf("temperature %g: want 0 to 2", t)
		}
	}
	samples := max(1, p.Samples)
	times, err := Arrivals(p.Arrival, p.Duration, p.Seed)
	if err != nil {
		return nil, err
	}
	if p.MaxRequests > 0 && len(times) > p.MaxRequests {
		times = times[:p.MaxRequests]
	}
	if len(times) == 0 {
		return nil, fmt.Errorf("no arrivals in %v (raise the rate or the duration)", p.Duration)
	}
	if len(times) > 1_000_000 {
		return nil, fmt.Errorf("%d probes: at most 1,000,000 (lower the rate or the duration)", len(times))
	}
	// Arrival i asks probe i / (len(temps)·samples) at temperature and sample from the rest,
	// so the repeats of one probe are neighbours in time.
	per := len(temps) * samples
	var tok tokenizer.Reference
	reqs := make([]traces.Request, 0, len(times))
	var probe traces.Request
	for i, at := range times {
		k, rep := i/per, i%per
		if rep == 0 {
			r := newRNG(p.Seed, 1<<41+uint64(k))
			switch p.Preset {
			case "long-context-probe":
				probe = longContextProbe(r, k, lengths)
			case "tool-calling":
				probe = toolProbe(r, k)
			default:
				probe = jsonProbe(r)
			}
		}
		q := probe
		q.Arrival = at
		q.Messages = slices.Clone(probe.Messages)
		t := temps[rep/samples]
		q.Temperature = &t
		if len(p.Temperatures) > 0 {
			q.Class += "/t=" + strconv.FormatFloat(t, 'g', -1, 64)
		}
		if samples > 1 {
			s := int64(rep%samples + 1)
			q.Seed = &s
		}
		for _, m := range q.Messages {
			q.InputTokens += tok.Count(m.Content)
		}
		reqs = append(reqs, q)
	}
	for i := range reqs {
		reqs[i].ID = "r" + strconv.Itoa(i+1)
	}
	return reqs, nil
}

var probeNames = []string{"Okafor", "Lindqvist", "Abara", "Moreau", "Tanaka", "Haddad", "Kowalski",
	"Nguyen", "Silva", "Brennan", "Ivanova", "Mensah", "Castillo", "Fischer", "Rahman", "Ortiz"}

// longContextProbe is probe k: a document of length lengths[k mod …] with facts at depths
// 0.1, 0.5 and 0.9, asking for the one at position (k / len(lengths)) mod 3.
func longContextProbe(r *rng, k int, lengths []int) traces.Request {
	n := lengths[k%len(lengths)]
	pos := (k / len(lengths)) % 3
	names := make([]string, 3)
	perm := r.perm(len(probeNames))
	for i := range names {
		names[i] = probeNames[perm[i]]
	}
	values := make([]string, 3)
	for i := range values {
		values[i] = fmt.Sprintf("ORD-%05d", r.intn(100000))
	}
	facts := make([]string, 3)
	factToks := 0
	var tok tokenizer.Reference
	for i := range facts {
		facts[i] = " The order number for customer " + names[i] + " is " + values[i] + "."
		factToks += tok.Count(facts[i])
	}
	intro := "Read the records below and answer the question at the end.\n"
	question := "\nWhat is the order number for customer " + names[pos] + "? Answer with the order number."
	filler := max(30, n-factToks-tok.Count(intro)-tok.Count(question))
	// Filler runs: 0.1, 0.4, 0.4 and 0.1 of the filler around the facts.
	cuts := []int{filler / 10, filler * 4 / 10, filler * 4 / 10}
	cuts = append(cuts, filler-cuts[0]-cuts[1]-cuts[2])
	seed := tokenizer.Mix(uint64(r.src.Uint64()))
	var b strings.Builder
	b.WriteString(intro)
	at := 0
	for i, c := range cuts {
		b.WriteString(tokenizer.Text(seed, at, c))
		at += c
		if i < 3 {
			b.WriteString(".")
			b.WriteString(facts[i])
		}
	}
	b.WriteString(question)
	label := []string{"begin", "middle", "end"}[pos]
	return traces.Request{
		Class:        fmt.Sprintf("lc-%dk/%s", (n+512)/1024, label),
		OutputTokens: 48,
		Messages:     []traces.Message{{Role: "user", Content: b.String()}},
		Expect:       []traces.Expectation{{Kind: traces.CheckContains, Values: []string{values[pos]}}},
	}
}

// perm returns a random permutation of [0, n).
func (r *rng) perm(n int) []int {
	p := make([]int, n)
	for i := range p {
		j := r.intn(i + 1)
		p[i], p[j] = p[j], i
	}
	return p
}

// jsonProbe is an invoice to extract into ProbeInvoiceSchema.
func jsonProbe(r *rng) traces.Request {
	inv := fmt.Sprintf("INV-%04d", r.intn(10000))
	name := probeNames[r.intn(len(probeNames))]
	total := fmt.Sprintf("%d.%02d", 10+r.intn(990), r.intn(100))
	currency := []string{"USD", "EUR", "GBP"}[r.intn(3)]
	paid := []string{"yes", "no"}[r.intn(2)]
	content := "Extract the invoice below as JSON.\n" +
		"- invoice number: " + inv + "\n" +
		"- customer name: " + "Ada " + name + "\n" +
		"- customer email: " + strings.ToLower(name) + "@example.com\n" +
		"- total amount: " + total + "\n" +
		"- currency: " + currency + "\n" +
		"- paid: " + paid + "\n" +
		"- tags: " + []string{"urgent", "recurring", "disputed"}[r.intn(3)] + ", q" + strconv.Itoa(1+r.intn(4)) + "\n"
	format := `{"type":"json_schema","json_schema":{"name":"invoice","strict":true,"schema":` + ProbeInvoiceSchema + `}}`
	return traces.Request{
		Class:          "json-output",
		OutputTokens:   128,
		Messages:       []traces.Message{{Role: "user", Content: content}},
		ResponseFormat: json.RawMessage(format),
		Expect: []traces.Expectation{
			{Kind: traces.CheckJSONSchema, Schema: json.RawMessage(ProbeInvoiceSchema)},
			{Kind: traces.CheckContains, Values: []string{inv}},
		},
	}
}

// ProbeInvoiceSchema is the fixed schema of the json-output probe.
const ProbeInvoiceSchema = `{"type":"object","properties":{` +
	`"invoiceNumber":{"type":"string","description":"invoice number"},` +
	`"customer":{"type":"object","properties":{"name":{"type":"string","description":"customer name"},"email":{"type":"string","description":"customer email"}},"required":["name","email"],"additionalProperties":false},` +
	`"total":{"type":"number","description":"total amount"},` +
	`"currency":{"type":"string","enum":["USD","EUR","GBP"],"description":"currency"},` +
	`"paid":{"type":"boolean","description":"paid"},` +
	`"tags":{"type":"array","items":{"type":"string"},"description":"tags"}},` +
	`"required":["invoiceNumber","customer","total","currency","paid","tags"],"additionalProperties":false}`
