package quality

import (
	"fmt"
	"strings"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// Grader grades the records of a run against the expect checks of its trace. It is safe for
// concurrent use once built (Grade only reads it).
type Grader struct {
	byID map[string]*compiled
}

// NewGrader compiles the checks of every request of src that has any. It returns nil (and no
// error) when no request has checks: nothing is graded.
func NewGrader(src traces.Source) (*Grader, error) {
	g := &Grader{byID: map[string]*compiled{}}
	cache := schemaCache{}
	var firstErr error
	add := func(q *traces.Request) {
		if len(q.Expect) == 0 || firstErr != nil {
			return
		}
		c, err := compile(q, cache)
		if err != nil {
			firstErr = err
			return
		}
		g.byID[q.ID] = c
	}
	src.Sessions(func(_ int, q *traces.Request) { add(q) })
	if err := src.Singles(func(_ int, q *traces.Request) error { add(q); return nil }); err != nil {
		return nil, fmt.Errorf("read the trace's checks: %w", err)
	}
	if firstErr != nil {
		return nil, firstErr
	}
	if len(g.byID) == 0 {
		return nil, nil
	}
	return g, nil
}

// Len is the number of requests with checks.
func (g *Grader) Len() int {
	if g == nil {
		return 0
	}
	return len(g.byID)
}

// Has reports whether the request id carries checks.
func (g *Grader) Has(id string) bool {
	if g == nil {
		return false
	}
	_, ok := g.byID[id]
	return ok
}

// Grade sets r.Grade and r.GradeNote when r's request has checks (and clears them when it
// has none): a request that failed is graded by its failure (timeout, or request_failed; one
// never sent is not graded), one that answered nothing is empty, otherwise the checks run in
// order and the first that fails gives the grade.
func (g *Grader) Grade(r *metrics.Record) {
	r.Grade, r.GradeNote = "", ""
	if g == nil {
		return
	}
	c, ok := g.byID[r.ID]
	if !ok {
		return
	}
	r.Grade, r.GradeNote = c.grade(r)
}

func (c *compiled) grade(r *metrics.Record) (string, string) {
	switch {
	case r.Failure == metrics.FailDropped:
		return "", ""
	case strings.HasPrefix(string(r.Failure), "timeout"):
		return metrics.GradeTimeout, "the request failed: " + string(r.Failure)
	case r.Failure == metrics.FailEmpty:
		return metrics.GradeEmpty, "the response carried no generated text"
	case !r.OK() && r.Failure != metrics.FailShortOutput: // a short output is still an answer
		return metrics.GradeRequestFailed, "the request failed: " + string(r.Failure)
	}
	out := OutputOf(r)
	if strings.TrimSpace(out.Text) == "" && len(out.ToolCalls) == 0 {
		return metrics.GradeEmpty, "no answer text and no tool call"
	}
	for i := range c.checks {
		if res := c.checks[i].run(out, c.tools); !res.OK() {
			return res.Reason, clipNote(fmt.Sprintf("expect[%d] %s: %s", i, c.checks[i].kind, res.Note))
		}
	}
	return metrics.GradePass, ""
}

func clipNote(s string) string {
	if len(s) <= metrics.MaxGradeNote {
		return s
	}
	cut := metrics.MaxGradeNote
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}
