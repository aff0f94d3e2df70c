package workloads

import (
	"fmt"
	"sort"
	"strings"
)

// Presets. Each is a Spec with Poisson arrivals at 1 request/s for 60 s and seed 1; callers
// set the rate, duration and seed they want. Length parameters and their sources:
//
//   - chat: input lognormal(mean 1300, sd 1000, max 8192) — median about 1030 tokens — and
//     output lognormal(mean 200, sd 230, max 2048) — median about 130. Source: the Splitwise
//     paper's (Patel et al., ISCA 2024) characterization of the Azure LLM inference trace 2023
//     (conversation): median prompt 1020 tokens, median output 129 tokens.
//   - rag: prefill-heavy. A shared system prompt and instructions (8 prefix groups of 1024
//     tokens, Zipf popularity s=1) followed by retrieved passages and the question, lognormal
//     (mean 2500, sd 1200, max 12000); output lognormal(mean 250, sd 150, max 1024). Assumption:
//     4–8 retrieved chunks of 300–500 tokens, as common RAG pipelines use.
//   - summarization: prefill-heavy. Documents lognormal(mean 5000, sd 3000, max 30000);
//     summaries lognormal(mean 350, sd 200, max 1500), correlation 0.3. Assumption modelled on
//     long-document summarization sets (news to report length).
//   - code: decode-heavy code generation. Input lognormal(mean 1500, sd 1200, max 16000),
//     output lognormal(mean 700, sd 500, max 4096). Assumption; note that code *completion*
//     (the Azure 2023 code trace: median prompt about 1500, median output 13 tokens, per
//     Splitwise) is prefill-heavy instead; import that trace to test completion.
//   - reasoning: decode-heavy. Input lognormal(mean 600, sd 500, max 8192); long chains of
//     thought, output lognormal(mean 4000, sd 3000, max 32768), correlation 0.3. Assumption
//     reflecting reasoning models whose answers run to thousands of tokens.
//   - agentic: multi-turn sessions with growing context. A shared tool/system prefix (4 groups
//     of 2048 tokens, Zipf s=1), a task lognormal(mean 800, sd 500), uniform 3–12 turns, each
//     later turn adding a tool result lognormal(mean 600, sd 500, max 8000), outputs
//     lognormal(mean 200, sd 150, max 2048), tool/think time lognormal(mean 1500 ms, sd 1000),
//     contexts capped at 65536 tokens. The arrival rate counts sessions. Assumption modelled on
//     tool-calling agents.
//   - multimodal: visual question answering, 1–3 synthetic images per request (images.go has
//     the lengths, resolutions and why).
//   - prefix-hit: a controlled prefix-cache hit rate (prefixhit.go): 8 prefix groups of 4096
//     tokens, each request adding 1024 of its own, output lognormal(mean 200, sd 150, max
//     1024): 80% of every prompt is cached once the groups are primed (run --prime-prefixes);
//     gen --prefix-hit-rate sets another rate. Synthetic by design.
//   - mixed: chat 35%, rag 20%, summarization 10%, code 20%, reasoning 15%, every request
//     tagged with its class.
//
// For comparison, the Mooncake (Kimi) trace averages 7590 input and 182 output tokens per
// request (Qin et al., FAST 2025); import it rather than approximating it.
var presets = map[string]func() []ClassSpec{
	"chat":          func() []ClassSpec { return []ClassSpec{chatClass()} },
	"rag":           func() []ClassSpec { return []ClassSpec{ragClass()} },
	"summarization": func() []ClassSpec { return []ClassSpec{summarizationClass()} },
	"code":          func() []ClassSpec { return []ClassSpec{codeClass()} },
	"reasoning":     func() []ClassSpec { return []ClassSpec{reasoningClass()} },
	"agentic":       func() []ClassSpec { return []ClassSpec{agenticClass()} },
	"multimodal":    func() []ClassSpec { return []ClassSpec{multimodalClass()} },
	"prefix-hit":    func() []ClassSpec { return []ClassSpec{prefixHitClass()} },
	"mixed": func() []ClassSpec {
		cs := []ClassSpec{chatClass(), ragClass(), summarizationClass(), codeClass(), reasoningClass()}
		for i, w := range []float64{0.35, 0.2, 0.1, 0.2, 0.15} {
			cs[i].Weight = w
		}
		return cs
	},
}

func logn(mean, sd float64, max int) Dist {
	return Dist{Kind: LogNormal, Mean: mean, SD: sd, Min: 1, Max: max}
}

func chatClass() ClassSpec {
	return ClassSpec{Name: "chat", Input: logn(1300, 1000, 8192), Output: logn(200, 230, 2048)}
}

func ragClass() ClassSpec {
	return ClassSpec{Name: "rag", Input: logn(2500, 1200, 12000), Output: logn(250, 150, 1024),
		Prefix: &PrefixSpec{Groups: 8, Tokens: 1024, Zipf: 1}}
}

func summarizationClass() ClassSpec {
	return ClassSpec{Name: "summarization", Input: logn(5000, 3000, 30000), Output: logn(350, 200, 1500), Correlation: 0.3}
}

func codeClass() ClassSpec {
	return ClassSpec{Name: "code", Input: logn(1500, 1200, 16000), Output: logn(700, 500, 4096)}
}

func reasoningClass() ClassSpec {
	return ClassSpec{Name: "reasoning", Input: logn(600, 500, 8192), Output: logn(4000, 3000, 32768), Correlation: 0.3}
}

func agenticClass() ClassSpec {
	return ClassSpec{Name: "agentic", Input: logn(800, 500, 8000), Output: logn(200, 150, 2048),
		Prefix: &PrefixSpec{Groups: 4, Tokens: 2048, Zipf: 1},
		Session: &SessionSpec{
			Turns:    Dist{Kind: Uniform, Min: 3, Max: 12},
			NewInput: logn(600, 500, 8000),
			ThinkMS:  Dist{Kind: LogNormal, Mean: 1500, SD: 1000, Max: 30000},
			MaxInput: 65536,
			// Tool calls between the agent's turns, and sub-agents fanned out after a quarter
			// of them, two to four at a time.
			ToolMS:     Dist{Kind: LogNormal, Mean: 800, SD: 600, Max: 20000},
			FanOutProb: 0.25,
			FanOut:     Dist{Kind: Uniform, Min: 2, Max: 4},
		}}
}

// PresetNames returns the preset names, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Preset returns the named preset's Spec (Poisson arrivals at 1 request/s for 60 s, seed 1).
func Preset(name string) (Spec, error) {
	f, ok := presets[name]
	if !ok {
		return Spec{}, fmt.Errorf("unknown preset %q (one of %s)", name, strings.Join(PresetNames(), ", "))
	}
	return Spec{Seed: 1, DurationS: 60, Arrival: ArrivalSpec{Process: Poisson, Rate: 1}, Classes: f()}, nil
}
