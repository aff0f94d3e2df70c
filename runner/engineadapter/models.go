package engineadapter

import (
	"fmt"
	"strings"

	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/traces"
)

// modelCheck is the set of model names a simulated engine serves (issue 38): a trace request
// naming another is refused before the simulation, with its line and field, as the HTTP
// engine refuses it with a 404.
type modelCheck struct {
	served map[string]bool
	names  []string
}

func newModelCheck(cfg refengine.Config) modelCheck {
	m := modelCheck{served: map[string]bool{}, names: cfg.ServedModels()}
	for _, n := range m.names {
		m.served[n] = true
	}
	return m
}

// check returns nil when q names no model or one the engine serves.
func (m modelCheck) check(q *traces.Request) error {
	if q.Model == "" || m.served[q.Model] {
		return nil
	}
	return fmt.Errorf("trace line %d (request %s): model: %s is not served by the reference engine (it serves %s); serve it as an adapter with --lora %s, or fix the trace",
		q.Line, safetext.Quote(q.ID, 64), safetext.Quote(q.Model, 64), strings.Join(m.names, ", "), safetext.Quote(q.Model, 64))
}

// checkAll is check over reqs.
func (m modelCheck) checkAll(reqs []traces.Request) error {
	for i := range reqs {
		if err := m.check(&reqs[i]); err != nil {
			return err
		}
	}
	return nil
}
