package history

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// WriteCheck writes a CheckResult as "text" (for a terminal or a log), "markdown" (a pull
// request or chat message) or "json".
func WriteCheck(w io.Writer, res *CheckResult, format string) error {
	switch format {
	case "", "text":
		return writeCheckText(w, res)
	case "markdown", "md":
		return writeCheckMarkdown(w, res)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(jsonSafe(res))
	}
	return fmt.Errorf("--format %s: use text, markdown or json", quote(format))
}

// jsonSafe replaces the infinite relative changes (a change from zero) by nil-able values:
// JSON has no infinity.
func jsonSafe(res *CheckResult) any {
	type change struct {
		Change
		Relative *float64 `json:"relative"`
	}
	type series struct {
		Series
		Changes []change `json:"changes"`
	}
	out := struct {
		*CheckResult
		Series []series `json:"series"`
	}{CheckResult: res}
	for _, s := range res.Series {
		ss := series{Series: s, Changes: []change{}}
		for _, c := range s.Changes {
			cc := change{Change: c}
			if !math.IsInf(c.Relative, 0) && !math.IsNaN(c.Relative) {
				r := c.Relative
				cc.Relative = &r
			}
			ss.Changes = append(ss.Changes, cc)
		}
		out.Series = append(out.Series, ss)
	}
	return out
}

func writeCheckText(w io.Writer, res *CheckResult) error {
	var b strings.Builder
	configs := map[string]bool{}
	for _, s := range res.Series {
		configs[s.Config] = true
	}
	fmt.Fprintf(&b, "history check: %d runs, %d series in %d configuration(s) of %s\n", res.Runs, len(res.Series), len(configs), clean(res.Store))
	fmt.Fprintf(&b, "E-Divisive means, permutation test: change p ≤ %s, weak p ≤ %s, ≥ %d runs each side, minimum change %s\n",
		fmtNum(res.Alpha), fmtNum(res.WeakAlpha), res.MinSize, fmtPct(res.MinChange))
	for _, s := range res.Series {
		fmt.Fprintf(&b, "\n%s (%s, %s) · %s · %d runs\n", s.Metric, s.Unit, betterText(s.Better), clean(s.Config), len(s.Points))
		if s.Short {
			fmt.Fprintf(&b, "  too few runs to test (need %d)\n", 2*res.MinSize)
			continue
		}
		if len(s.Changes) == 0 {
			fmt.Fprintf(&b, "  no change\n")
			continue
		}
		for _, c := range s.Changes {
			fmt.Fprintf(&b, "  %s at run %d (%s, %s): %s → %s (%s), p=%s\n", strings.ToUpper(label(c)), c.RunID,
				fmtTime(c.Start), clean(c.Dir), fmtVal(c.Before.Mean, s.Unit), fmtVal(c.After.Mean, s.Unit), fmtRel(c.Relative), fmtNum(c.P))
			fmt.Fprintf(&b, "    before: %s [%s, %s] over %d runs · after: %s [%s, %s] over %d runs\n",
				fmtVal(c.Before.Mean, s.Unit), fmtVal(c.Before.Lo, s.Unit), fmtVal(c.Before.Hi, s.Unit), c.Before.Runs,
				fmtVal(c.After.Mean, s.Unit), fmtVal(c.After.Lo, s.Unit), fmtVal(c.After.Hi, s.Unit), c.After.Runs)
			if c.Before.WithinSE > 0 || c.After.WithinSE > 0 {
				fmt.Fprintf(&b, "    each run's own standard error: %s before, %s after\n", fmtVal(c.Before.WithinSE, s.Unit), fmtVal(c.After.WithinSE, s.Unit))
			}
			if len(c.Changed) == 0 {
				fmt.Fprintf(&b, "    changed: nothing llmbench can see between run %d and run %d\n", c.PrevID, c.RunID)
			} else {
				fmt.Fprintf(&b, "    changed (run %d → %d): %s\n", c.PrevID, c.RunID, diffList(c.Changed))
			}
			if len(c.Varying) > 0 {
				fmt.Fprintf(&b, "    also differed (varies run to run): %s\n", diffList(c.Varying))
			}
		}
	}
	b.WriteString("\n" + verdict(res) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeCheckMarkdown(w io.Writer, res *CheckResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### llmbench history check\n\n**%s**\n\n", md(verdict(res)))
	fmt.Fprintf(&b, "%d runs · E-Divisive means with a permutation test (change p ≤ %s, weak p ≤ %s, ≥ %d runs each side, minimum change %s)\n\n",
		res.Runs, fmtNum(res.Alpha), fmtNum(res.WeakAlpha), res.MinSize, md(fmtPct(res.MinChange)))
	b.WriteString("| metric | configuration | change | first run after | before | after | Δ | p | what changed |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	rows := 0
	for _, s := range res.Series {
		for _, c := range s.Changes {
			rows++
			fmt.Fprintf(&b, "| %s | %s | %s | %d (%s) | %s [%s, %s] | %s [%s, %s] | %s | %s | %s |\n",
				md(s.Metric), md(s.Config), md(label(c)), c.RunID, md(fmtTime(c.Start)),
				md(fmtVal(c.Before.Mean, s.Unit)), md(fmtVal(c.Before.Lo, s.Unit)), md(fmtVal(c.Before.Hi, s.Unit)),
				md(fmtVal(c.After.Mean, s.Unit)), md(fmtVal(c.After.Lo, s.Unit)), md(fmtVal(c.After.Hi, s.Unit)),
				md(fmtRel(c.Relative)), fmtNum(c.P), md(diffList(c.Changed)))
		}
	}
	if rows == 0 {
		b.WriteString("| – | – | no change | | | | | | |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func verdict(res *CheckResult) string {
	var regress, weak, other int
	for _, s := range res.Series {
		for _, c := range s.Changes {
			switch {
			case c.Fails():
				regress++
			case c.Weak:
				weak++
			default:
				other++
			}
		}
	}
	since := ""
	if !res.Since.IsZero() {
		since = " since " + fmtTime(res.Since)
	}
	if regress > 0 {
		return fmt.Sprintf("FAIL: %d regression(s)%s (%d weak, %d other change(s))", regress, since, weak, other)
	}
	return fmt.Sprintf("OK: no regression%s (%d weak, %d other change(s))", since, weak, other)
}

func label(c Change) string {
	l := c.Kind
	if c.Weak {
		l = "weak " + l
	}
	if c.Within {
		l += " (within the runs' own noise)"
	}
	if c.Kind == "regression" && !c.Weak && !c.Recent {
		l += " (before --since)"
	}
	return l
}

func betterText(b string) string {
	switch b {
	case "lower", "higher":
		return b + " is better"
	}
	return "descriptive"
}

func diffList(ds []Diff) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%s %s → %s", d.Key, orNone(d.Before), orNone(d.After)))
	}
	return clean(strings.Join(parts, ", "))
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "unknown time"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }

func fmtPct(v float64) string { return strconv.FormatFloat(v*100, 'f', -1, 64) + "%" }

func fmtRel(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "from 0"
	case math.IsInf(v, -1):
		return "to below 0"
	}
	return fmt.Sprintf("%+.1f%%", v*100)
}

// fmtVal formats a value with its unit, with 4 significant digits.
func fmtVal(v float64, unit string) string {
	s := strconv.FormatFloat(v, 'g', 4, 64)
	if math.Abs(v) >= 1e4 && math.Abs(v) < 1e9 {
		s = strconv.FormatFloat(v, 'f', 0, 64)
	}
	switch unit {
	case "ms":
		return s + " ms"
	case "fraction":
		return strconv.FormatFloat(v*100, 'g', 4, 64) + "%"
	case "", "index":
		return s
	}
	return s + " " + unit
}

// clean removes control characters from outside text written to a terminal.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

// md escapes text for a Markdown table cell.
func md(s string) string {
	s = clean(s)
	r := strings.NewReplacer(`\`, `\\`, "|", `\|`, "<", "&lt;", ">", "&gt;", "&", "&amp;", "*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, "]", `\]`)
	return r.Replace(s)
}

// WriteList writes one line per run: id, start, hash prefix, model, trace fingerprint, tags,
// revision and results directory.
func WriteList(w io.Writer, runs []*Run) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-5s  %-20s  %-12s  %-16s  %-19s  %-24s  %s\n", "RUN", "START", "HASH", "MODEL", "TRACE", "TAGS", "RESULTS")
	for _, r := range runs {
		var tags []string
		for _, k := range sortedKeys(r.Tags) {
			tags = append(tags, k+"="+r.Tags[k])
		}
		t := strings.Join(tags, ",")
		if r.Revision != "" {
			t = strings.TrimPrefix(t+",rev="+r.Revision, ",")
		}
		if t == "" {
			t = "-"
		}
		fmt.Fprintf(&b, "%-5d  %-20s  %-12s  %-16s  %-19s  %-24s  %s\n", r.ID, fmtTime(r.Start), r.Hash[:min(12, len(r.Hash))],
			clean(orDash(r.Model)), clean(shortFingerprint(r.TraceFingerprint)), clean(t), clean(r.Dir))
	}
	fmt.Fprintf(&b, "%d runs\n", len(runs))
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteShow writes everything recorded of one run: facts, tags and every metric.
func WriteShow(w io.Writer, r *Run) error {
	var b strings.Builder
	fmt.Fprintf(&b, "run %d\n", r.ID)
	width := 22
	for _, m := range []map[string]string{r.Facts, r.Tags} {
		for k := range m {
			width = max(width, min(len(k), 48))
		}
	}
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "  %-*s %s\n", width, clean(k), clean(v))
		}
	}
	row("content hash", r.Hash)
	row("results", r.Dir)
	row("started", fmtTime(r.Start))
	row("added", fmtTime(r.Added))
	row("summary schema", r.SummarySchema)
	row("llmbench", r.Version)
	row("revision", r.Revision)
	row("model", r.Model)
	row("backend", r.Backend)
	row("mode", r.Mode)
	row("endpoint", r.Endpoint)
	row("trace", r.Trace)
	row("trace fingerprint", r.TraceFingerprint)
	row("server version", r.ServerVersion)
	row("machine", r.Machine)
	row("command", r.Command)
	if len(r.Tags) > 0 {
		b.WriteString("tags\n")
		for _, k := range sortedKeys(r.Tags) {
			row(k, r.Tags[k])
		}
	}
	b.WriteString("facts\n")
	for _, k := range sortedKeys(r.Facts) {
		row(k, r.Facts[k])
	}
	fmt.Fprintf(&b, "metrics (%d; [interval] the run's own 95%% interval)\n", len(r.Metrics))
	for _, k := range sortedKeys(r.Metrics) {
		unit := ""
		if mi, err := LookupMetric(k); err == nil {
			unit = mi.Unit
		}
		v := fmtVal(r.Metrics[k], unit)
		if iv, ok := r.Intervals[k]; ok {
			v += fmt.Sprintf("  [%s, %s]", fmtVal(iv.Lo, unit), fmtVal(iv.Hi, unit))
		}
		fmt.Fprintf(&b, "  %-*s %s\n", width, k, v)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shortFingerprint keeps a trace fingerprint to its column of `history list` (19 runes; the
// whole one is in `history show`), the way the hash column shows 12 characters.
func shortFingerprint(fp string) string {
	if r := []rune(fp); len(r) > 19 {
		return string(r[:18]) + "…"
	}
	return fp
}
