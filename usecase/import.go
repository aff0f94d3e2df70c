package usecase

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// ImportOptions are `llmbench import`'s options: convert the trace In of Format to Out.
type ImportOptions struct {
	Format, In, Out string
	// Tokenizer counts ShareGPT's tokens: reference, approx or a tokenizer.json path.
	Tokenizer string
	// TPOTMs estimates a recorded response's duration (toolagent, weka).
	TPOTMs float64
	// Import are traces.Import's options; Tokenizer, TPOT, OnSkip and OnBlockTokens are set
	// by Import.
	Import  traces.ImportOptions
	Changed Changed
}

// ImportFormats are the formats import reads.
var ImportFormats = traces.ImportFormats

// DefaultImportTPOTMs is import's default --tpot-ms.
const DefaultImportTPOTMs = float64(traces.DefaultImportTPOT) / 1e6

// importOnly are the flags that apply to some formats only.
var importOnly = map[string][]string{
	"tokenizer": {"sharegpt"}, "rate": {"sharegpt"}, "poisson": {"sharegpt"}, "seed": {"sharegpt"},
	"chat": {"sharegpt"}, "sessions": {"sharegpt"}, "think": {"sharegpt"}, "model": {"burstgpt"},
	"lenient": {"jsonl", "msgpack"}, "drop-failed": {"azure", "burstgpt", "mooncake", "toolagent", "weka"},
	"tpot-ms": {"toolagent", "weka"}, "keep-model": {"burstgpt", "weka"},
}

// checkFlags refuses flags that the format would ignore.
func (o *ImportOptions) checkFlags() error {
	names := make([]string, 0, len(importOnly))
	for n := range importOnly {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if o.Changed.Has(n) && !slices.Contains(importOnly[n], o.Format) {
			return fmt.Errorf("--%s applies to --format %s, not %s", n, strings.Join(importOnly[n], "|"), o.Format)
		}
	}
	return nil
}

// importSkips counts the rows an import skipped, by reason, and keeps the first few.
type importSkips struct {
	in       string
	byReason map[string]int
	examples []string
	total    int
}

func (s *importSkips) add(line int, reason string) {
	s.total++
	key := reason
	if i := strings.Index(key, " ("); i > 0 {
		key = key[:i]
	}
	s.byReason[key]++
	if len(s.examples) < 5 {
		s.examples = append(s.examples, fmt.Sprintf("  %s:%d: %s", s.in, line, reason))
	}
}

// Import converts the trace and reports on stderr what it wrote, the hash_ids block size it
// found and the rows it skipped.
func Import(env *Env, o *ImportOptions) error {
	if err := o.checkFlags(); err != nil {
		return err
	}
	opts := o.Import
	if o.Format == "sharegpt" {
		tok, err := tokenizer.Load(o.Tokenizer)
		if err != nil {
			return fmt.Errorf("--tokenizer: %w", err)
		}
		opts.Tokenizer = tok
	}
	if !(o.TPOTMs > 0) || o.TPOTMs > 60e3 {
		return fmt.Errorf("--tpot-ms must be a number of milliseconds in (0, 60000] (got %v)", o.TPOTMs)
	}
	opts.TPOT = time.Duration(o.TPOTMs * 1e6)
	blockNote := ""
	opts.OnBlockTokens = func(n int) {
		blockNote = fmt.Sprintf("import: hash_ids are blocks of %d tokens: replay with run --prefix-block-tokens %d and describe with trace stats --block-tokens %d\n", n, n, n)
	}
	skips := &importSkips{in: o.In, byReason: map[string]int{}}
	opts.OnSkip = skips.add
	f, err := openInput(o.In)
	if err != nil {
		return err
	}
	defer f.Close()
	reqs, err := traces.Import(o.Format, f, o.In, opts)
	if err != nil {
		return err
	}
	if err := writeTraceOut(env.Stdout, o.Out, reqs); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "import: %s from %s to %s\n", traceLine(reqs), o.In, outName(o.Out))
	fmt.Fprint(env.Stderr, blockNote)
	skips.print(env)
	return nil
}

// print lists the skipped rows on stderr, if any.
func (s *importSkips) print(env *Env) {
	if s.total == 0 {
		return
	}
	keys := make([]string, 0, len(s.byReason))
	for k := range s.byReason {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(env.Stderr, "import: skipped %d rows:\n", s.total)
	for _, k := range keys {
		fmt.Fprintf(env.Stderr, "  %6d  %s\n", s.byReason[k], k)
	}
	fmt.Fprintf(env.Stderr, "first skipped rows:\n%s\n", strings.Join(s.examples, "\n"))
}
