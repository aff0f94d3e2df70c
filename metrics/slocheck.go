package metrics

// SLOCheck judges one record at a time against the SLOs of Options (SLO, ClassSLO), exactly as
// Summarize counts a request in goodput: a search over many simulated configurations
// (`llmbench plan`) counts the requests that meet the SLO as they finish, and stops a
// configuration once it can no longer reach its target, without building a summary.
type SLOCheck struct{ s summarizer }

// NewSLOCheck returns a checker for the SLOs of o.
func NewSLOCheck(o Options) *SLOCheck { return &SLOCheck{s: summarizer{opts: o}} }

// Meets reports whether r succeeded and met every SLO of its class.
func (c *SLOCheck) Meets(r *Record) bool { return r.OK() && c.s.meets(r) }
