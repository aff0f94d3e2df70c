package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/usecase"
)

func init() { register("import", newImportCmd) }

func newImportCmd(app *App) *cobra.Command {
	o := &usecase.ImportOptions{}
	cmd := &cobra.Command{
		Use:   "import --format " + strings.Join(usecase.ImportFormats, "|") + " IN [-o OUT.jsonl]",
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
			o.In, o.Changed = args[0], cmd.Flags().Changed
			return usecase.Import(app.env(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Format, "format", "", "input format: "+strings.Join(usecase.ImportFormats, ", "))
	fs.StringVarP(&o.Out, "out", "o", "-", "output trace (.jsonl, or .msgpack); - for stdout")
	fs.StringVar(&o.Import.Model, "model", "", "burstgpt: keep only rows of this model (e.g. ChatGPT, GPT-4)")
	fs.BoolVar(&o.Import.DropFailed, "drop-failed", false, "skip rows of failed requests (zero output tokens)")
	fs.BoolVar(&o.Import.SkipBad, "skip-bad", false, "skip malformed rows (counted and listed on stderr) instead of stopping")
	fs.IntVar(&o.Import.Limit, "limit", 0, "stop after this many requests (0 = all)")
	fs.StringVar(&o.Import.Class, "class", "", "tag every request with this class (burstgpt default: its Log Type)")
	fs.BoolVar(&o.Import.Lenient, "lenient", false, "jsonl/msgpack: ignore unknown fields")
	fs.StringVar(&o.Tokenizer, "tokenizer", "reference", "sharegpt: tokenizer for token counts: reference, approx or a tokenizer.json path")
	fs.Float64Var(&o.Import.Rate, "rate", 1, "sharegpt: conversations per second")
	fs.BoolVar(&o.Import.Poisson, "poisson", false, "sharegpt: Poisson arrivals at --rate instead of constant spacing")
	fs.Int64Var(&o.Import.Seed, "seed", 1, "sharegpt: seed for --poisson")
	fs.BoolVar(&o.Import.Chat, "chat", false, "sharegpt: emit messages instead of prompt text")
	fs.BoolVar(&o.Import.Sessions, "sessions", false, "sharegpt: every user turn becomes a turn of a multi-turn session (implies --chat)")
	fs.DurationVar(&o.Import.Think, "think", 10*time.Second, "sharegpt --sessions: time between turns")
	fs.Float64Var(&o.TPOTMs, "tpot-ms", usecase.DefaultImportTPOTMs, "toolagent, weka: ms per output token that estimates a recorded response's duration where the trace has none")
	addImportModelFlags(fs, o) // per-request model (issue 38)
	_ = cmd.MarkFlagRequired("format")
	return cmd
}
