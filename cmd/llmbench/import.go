package main

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

func init() { register("import", newImportCmd) }

type importOptions struct {
	format, in, out, tok string
	tpotMs               float64
	opts                 traces.ImportOptions
}

func newImportCmd(app *App) *cobra.Command {
	o := &importOptions{}
	cmd := &cobra.Command{
		Use:   "import --format " + strings.Join(traces.ImportFormats, "|") + " IN [-o OUT.jsonl]",
		Short: "Convert a public trace (Azure, BurstGPT, Mooncake, Weka, ShareGPT) to an llmbench trace",
		Long: `Convert a trace in a public format to llmbench's trace format (JSONL v1, or msgpack when OUT
ends in .msgpack). Columns and fields are read by name; extra ones are ignored; arrivals become
offsets from the earliest row. A bad row stops the import with FILE:LINE: COLUMN: REASON unless
--skip-bad is given; rows recording failed requests (zero output tokens) need --drop-failed.
The column mapping of each format is documented in traces/FORMAT.md.

ShareGPT has text but no token counts or times: counts come from --tokenizer, arrivals from
--rate (constant spacing, or --poisson with --seed).

Agentic traces become sessions whose turns wait for one another (after, tool_delay_s, think_s):
toolagent (Mooncake's FAST'25 toolagent trace) rebuilds its sessions from hash_ids chains, weka
(Weka / kv-cache-tester coding traces, one JSON conversation per file or one per line) maps
sub-agents to fan-out and join. Where a trace does not record a response's duration, it is
estimated as output tokens x --tpot-ms and the rest of the gap is the wait before the next call.`,
		Example: `  llmbench import --format azure AzureLLMInferenceTrace_conv.csv -o azure-conv.jsonl --drop-failed
  llmbench import --format burstgpt BurstGPT_1.csv --model ChatGPT --drop-failed -o burst.jsonl
  llmbench import --format mooncake mooncake_trace.jsonl -o mooncake.jsonl
  llmbench import --format toolagent toolagent_trace.jsonl -o toolagent.jsonl
  llmbench import --format weka traces/trace_0001.json -o weka-0001.jsonl
  llmbench import --format sharegpt ShareGPT_V3.json --limit 1000 --rate 4 --poisson --sessions -o sharegpt.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.in = args[0]
			if err := checkImportFlags(o.format, cmd.Flags().Changed); err != nil {
				return err
			}
			return runImport(app, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.format, "format", "", "input format: "+strings.Join(traces.ImportFormats, ", "))
	fs.StringVarP(&o.out, "out", "o", "-", "output trace (.jsonl, or .msgpack); - for stdout")
	fs.StringVar(&o.opts.Model, "model", "", "burstgpt: keep only rows of this model (e.g. ChatGPT, GPT-4)")
	fs.BoolVar(&o.opts.DropFailed, "drop-failed", false, "skip rows of failed requests (zero output tokens)")
	fs.BoolVar(&o.opts.SkipBad, "skip-bad", false, "skip malformed rows (counted and listed on stderr) instead of stopping")
	fs.IntVar(&o.opts.Limit, "limit", 0, "stop after this many requests (0 = all)")
	fs.StringVar(&o.opts.Class, "class", "", "tag every request with this class (burstgpt default: its Log Type)")
	fs.BoolVar(&o.opts.Lenient, "lenient", false, "jsonl/msgpack: ignore unknown fields")
	fs.StringVar(&o.tok, "tokenizer", "reference", "sharegpt: tokenizer for token counts: reference, approx or a tokenizer.json path")
	fs.Float64Var(&o.opts.Rate, "rate", 1, "sharegpt: conversations per second")
	fs.BoolVar(&o.opts.Poisson, "poisson", false, "sharegpt: Poisson arrivals at --rate instead of constant spacing")
	fs.Int64Var(&o.opts.Seed, "seed", 1, "sharegpt: seed for --poisson")
	fs.BoolVar(&o.opts.Chat, "chat", false, "sharegpt: emit messages instead of prompt text")
	fs.BoolVar(&o.opts.Sessions, "sessions", false, "sharegpt: every user turn becomes a turn of a multi-turn session (implies --chat)")
	fs.DurationVar(&o.opts.Think, "think", 10*time.Second, "sharegpt --sessions: time between turns")
	fs.Float64Var(&o.tpotMs, "tpot-ms", float64(traces.DefaultImportTPOT)/1e6, "toolagent, weka: ms per output token that estimates a recorded response's duration where the trace has none")
	addImportModelFlags(fs, &o.opts) // per-request model (issue 38)
	_ = cmd.MarkFlagRequired("format")
	return cmd
}

// checkImportFlags refuses flags that the format would ignore.
func checkImportFlags(format string, changed func(string) bool) error {
	only := map[string][]string{
		"tokenizer": {"sharegpt"}, "rate": {"sharegpt"}, "poisson": {"sharegpt"}, "seed": {"sharegpt"},
		"chat": {"sharegpt"}, "sessions": {"sharegpt"}, "think": {"sharegpt"}, "model": {"burstgpt"},
		"lenient": {"jsonl", "msgpack"}, "drop-failed": {"azure", "burstgpt", "mooncake", "toolagent", "weka"},
		"tpot-ms": {"toolagent", "weka"}, "keep-model": {"burstgpt", "weka"},
	}
	names := make([]string, 0, len(only))
	for n := range only {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if changed(n) && !slices.Contains(only[n], format) {
			return fmt.Errorf("--%s applies to --format %s, not %s", n, strings.Join(only[n], "|"), format)
		}
	}
	return nil
}

func runImport(app *App, o *importOptions) error {
	if o.format == "sharegpt" {
		tok, err := tokenizer.Load(o.tok)
		if err != nil {
			return fmt.Errorf("--tokenizer: %w", err)
		}
		o.opts.Tokenizer = tok
	}
	if !(o.tpotMs > 0) || o.tpotMs > 60e3 {
		return fmt.Errorf("--tpot-ms must be a number of milliseconds in (0, 60000] (got %v)", o.tpotMs)
	}
	o.opts.TPOT = time.Duration(o.tpotMs * 1e6)
	blockNote := ""
	o.opts.OnBlockTokens = func(n int) {
		blockNote = fmt.Sprintf("import: hash_ids are blocks of %d tokens: replay with run --prefix-block-tokens %d and describe with trace stats --block-tokens %d\n", n, n, n)
	}
	skips := map[string]int{}
	var examples []string
	skipped := 0
	o.opts.OnSkip = func(line int, reason string) {
		skipped++
		key := reason
		if i := strings.Index(key, " ("); i > 0 {
			key = key[:i]
		}
		skips[key]++
		if len(examples) < 5 {
			examples = append(examples, fmt.Sprintf("  %s:%d: %s", o.in, line, reason))
		}
	}
	f, err := openInput(o.in)
	if err != nil {
		return err
	}
	defer f.Close()
	reqs, err := traces.Import(o.format, f, o.in, o.opts)
	if err != nil {
		return err
	}
	if err := writeTraceOut(app.Stdout, o.out, reqs); err != nil {
		return err
	}
	fmt.Fprintf(app.Stderr, "import: %s from %s to %s\n", traceLine(reqs), o.in, outName(o.out))
	fmt.Fprint(app.Stderr, blockNote)
	if skipped > 0 {
		keys := make([]string, 0, len(skips))
		for k := range skips {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(app.Stderr, "import: skipped %d rows:\n", skipped)
		for _, k := range keys {
			fmt.Fprintf(app.Stderr, "  %6d  %s\n", skips[k], k)
		}
		fmt.Fprintf(app.Stderr, "first skipped rows:\n%s\n", strings.Join(examples, "\n"))
	}
	return nil
}

// openInput opens a file the user named, with an error that says which flag or argument.
func openInput(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open input: %w", err)
	}
	return f, nil
}
