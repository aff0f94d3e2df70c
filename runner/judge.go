package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/quality/judge"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/traces"
)

// Files the LLM judge writes into a results directory.
const (
	// JudgeFile holds one rubric verdict per line (judge.Verdict as JSON).
	JudgeFile = "judge.jsonl"
	// PairJudgeFile, in an ab directory, holds one pairwise verdict per line.
	PairJudgeFile = "judge-pairwise.jsonl"
)

// questions maps request id to the question text a judge sees: the prompt, or the chat
// messages as "role: content" lines (the last user message is the question; the others are
// its context).
func questions(reqs []traces.Request) map[string]string {
	m := make(map[string]string, len(reqs))
	for i := range reqs {
		q := &reqs[i]
		if q.Prompt != "" || len(q.Messages) == 0 {
			m[q.ID] = q.Prompt
			continue
		}
		var b strings.Builder
		for j, msg := range q.Messages {
			if j > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(msg.Role + ": " + msg.Content)
		}
		m[q.ID] = b.String()
	}
	return m
}

// answerText is what a judge reads of a response: its text, and its tool calls as
// name(arguments) lines.
func answerText(r *metrics.Record) string {
	s := r.OutputText
	for _, c := range r.ToolCalls {
		if s != "" {
			s += "\n"
		}
		s += "tool call: " + c.Name + "(" + c.Arguments + ")"
	}
	return s
}

// keptAnswers returns the steady, successful records of dir that kept an answer, in file
// order, first repeat only.
func keptAnswers(dir string) ([]metrics.Record, error) {
	var out []metrics.Record
	err := metrics.EachRecord(filepath.Join(dir, RecordsFile), func(r *metrics.Record) error {
		if r.Phase == metrics.PhaseSteady && r.Repeat == 0 && r.OK() && answerText(r) != "" {
			out = append(out, metrics.Record{ID: r.ID, OutputText: r.OutputText, ToolCalls: r.ToolCalls})
		}
		return nil
	})
	return out, err
}

var errNoAnswers = errors.New("no answer text was kept (requests keep it when they carry expect checks, or with --keep-output)")

// JudgeRun grades the answers kept in a finished results directory with an LLM judge in
// rubric mode, after the run (never inside its timing): it writes DIR/judge.jsonl, puts the
// judge's summary into summary.json's quality block and renders report.html again.
func JudgeRun(ctx context.Context, dir string, reqs []traces.Request, o judge.Options, hopts reports.HTMLOptions) (*metrics.Summary, error) {
	sum, err := ReadSummary(dir)
	if err != nil {
		return nil, err
	}
	recs, err := keptAnswers(dir)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errNoAnswers
	}
	qs := questions(reqs)
	items := make([]judge.Item, len(recs))
	for i := range recs {
		items[i] = judge.Item{ID: recs[i].ID, Question: qs[recs[i].ID], Answer: answerText(&recs[i])}
	}
	vs, usage := judge.Rubric(ctx, o, items)
	if err := writeLines(filepath.Join(dir, JudgeFile), len(vs), func(i int) any { return vs[i] }); err != nil {
		return nil, err
	}
	if sum.Quality == nil {
		sum.Quality = &metrics.Quality{Confidence: metrics.QualityConfidence, Resamples: metrics.QualityResamples}
	}
	sum.Quality.Judge = judge.RubricSummary(o, vs, usage)
	if err := WriteJSON(filepath.Join(dir, SummaryFile), sum); err != nil {
		return nil, err
	}
	if err := RenderReport(dir, sum, hopts); err != nil {
		return nil, err
	}
	if j := sum.Quality.Judge; j.Errors == j.Judged {
		return sum, fmt.Errorf("the judge gave no verdict on any of the %d answers; the first: %s", j.Judged, vs[0].Err)
	}
	return sum, ctx.Err()
}

// JudgeAB compares the answers of the first run of each arm of an ab experiment, pair by
// request id, with an LLM judge in pairwise mode (each pair asked twice, order swapped), and
// writes the verdicts to OUT/judge-pairwise.jsonl.
func JudgeAB(ctx context.Context, dirA, dirB, out string, reqs []traces.Request, o judge.Options) (*metrics.JudgeSummary, error) {
	a, err := keptAnswers(dirA)
	if err != nil {
		return nil, err
	}
	b, err := keptAnswers(dirB)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*metrics.Record, len(b))
	for i := range b {
		byID[b[i].ID] = &b[i]
	}
	qs := questions(reqs)
	var pairs []judge.Pair
	for i := range a {
		if rb, ok := byID[a[i].ID]; ok {
			pairs = append(pairs, judge.Pair{ID: a[i].ID, Question: qs[a[i].ID], A: answerText(&a[i]), B: answerText(rb)})
		}
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("no request answered by both arms kept its answer text: %w", errNoAnswers)
	}
	ps, usage := judge.Pairwise(ctx, o, pairs)
	if err := writeLines(filepath.Join(out, PairJudgeFile), len(ps), func(i int) any { return ps[i] }); err != nil {
		return nil, err
	}
	s := judge.PairSummary(o, ps, usage)
	if s.Errors == s.Judged {
		return s, fmt.Errorf("the judge gave no verdict on any of the %d pairs; the first: %s", s.Judged, ps[0].Err)
	}
	return s, ctx.Err()
}

// ReadVerdicts reads DIR/judge.jsonl.
func ReadVerdicts(dir string) ([]judge.Verdict, error) {
	path := filepath.Join(dir, JudgeFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read judge verdicts: %w (run with --judge-endpoint and --judge-model first)", err)
	}
	defer f.Close()
	var out []judge.Verdict
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var v judge.Verdict
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// writeLines writes n JSON values, one per line, atomically.
func writeLines(path string, n int, at func(i int) any) error {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for i := 0; i < n; i++ {
		if err := enc.Encode(at(i)); err != nil {
			return err
		}
	}
	return WriteFileAtomic(path, []byte(b.String()))
}
