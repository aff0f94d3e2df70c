package perf_test

import (
	"fmt"

	"github.com/llmbench/llmbench/refengine/perf"
)

// The figures the default constants give, for docs/engine.md and as a regression check: one
// sequence decoding after 128 tokens of context, 64 sequences decoding at 1,024 tokens of
// context, and the prefill of one 4,096-token prompt.
func Example() {
	fmt.Println("model          gpu        tp  weights  1-seq ms  tok/s  64-seq tok/s  4k-prefill ms  KV tokens")
	for _, c := range []struct {
		model, gpu, dtype string
		tp                int
	}{
		{"llama-3.1-8b", "h100", "bf16", 1},
		{"llama-3.1-8b", "h200", "bf16", 1},
		{"llama-3.1-8b", "a100", "bf16", 1},
		{"llama-3.1-8b", "h100", "fp8", 1},
		{"llama-3.1-8b", "h100", "int4", 1},
		{"llama-3.1-8b", "a100", "fp8", 1},
		{"llama-3.1-70b", "h100", "bf16", 2},
		{"llama-3.1-70b", "h100", "bf16", 4},
		{"llama-3.1-70b", "h100", "fp8", 1},
		{"llama-3.1-70b", "h200", "bf16", 2},
		{"mixtral-8x7b", "h100", "bf16", 2},
	} {
		m, _ := perf.LookupModel(c.model)
		g, _ := perf.LookupGPU(c.gpu)
		r, err := perf.New(perf.Config{Model: m, GPU: g, TP: c.tp, WeightDtype: c.dtype})
		if err != nil {
			fmt.Println(err)
			continue
		}
		var one, batch, prefill perf.Work
		one.Add(1, 128)
		for range 64 {
			batch.Add(1, 1024)
		}
		prefill.Add(4096, 0)
		d1 := r.StepTime(one)
		fmt.Printf("%-14s %-10s %2d  %-7s  %8.2f  %5.0f  %12.0f  %13.1f  %9d\n", m.Name, g.Name, c.tp, c.dtype,
			d1.Seconds()*1e3, 1/d1.Seconds(), 64/r.StepTime(batch).Seconds(),
			r.StepTime(prefill).Seconds()*1e3, r.MaxKVTokens())
	}
	// Output:
	// model          gpu        tp  weights  1-seq ms  tok/s  64-seq tok/s  4k-prefill ms  KV tokens
	// llama-3.1-8b   h100-sxm    1  bf16         6.95    144          6159           95.6     419152
	// llama-3.1-8b   h200        1  bf16         5.09    196          8416           95.5     838000
	// llama-3.1-8b   a100-80gb   1  bf16        10.91     92          3717          300.9     419152
	// llama-3.1-8b   h100-sxm    1  fp8          3.88    258          8766           66.2     480416
	// llama-3.1-8b   h100-sxm    1  int4         2.39    418         10329           95.4     510096
	// llama-3.1-8b   a100-80gb   1  fp8          5.86    171          4961          300.8     480416
	// llama-3.1-70b  h100-sxm    2  bf16        31.04     32          1747          462.6       2432
	// llama-3.1-70b  h100-sxm    4  bf16        20.73     48          2628          289.5     435776
	// llama-3.1-70b  h100-sxm    1  fp8         27.84     36          1718          553.0       1216
	// llama-3.1-70b  h200        2  bf16        22.88     44          2326          462.2     337520
	// mixtral-8x7b   h100-sxm    2  bf16         7.02    142          2936           89.1     370784
}
