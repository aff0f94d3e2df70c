package usecase

import (
	"fmt"
	"os"

	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/quality/judge"
)

// QualityOptions are the quality flags of run and ab (issue 17): --keep-output and the LLM
// judge.
type QualityOptions struct {
	KeepOutput     bool
	JudgeEndpoint  string
	JudgeModel     string
	JudgeRubric    string
	JudgeConc      int
	JudgeAPIKeyEnv string
	// Changed says which judge flags were given (refused without --judge-endpoint).
	Changed Changed
}

// JudgeOptions returns the judge's options, or nil when no judge was asked for. It refuses
// judge flags without an endpoint, which would do nothing.
func (f *QualityOptions) JudgeOptions(getenv func(string) string) (*judge.Options, error) {
	if f.JudgeEndpoint == "" {
		for _, name := range []string{"judge-model", "judge-rubric", "judge-concurrency", "judge-api-key-env"} {
			if f.Changed.Has(name) {
				return nil, fmt.Errorf("--%s needs --judge-endpoint (the judge's server)", name)
			}
		}
		return nil, nil
	}
	o := judge.Options{Endpoint: f.JudgeEndpoint, Model: f.JudgeModel, Concurrency: f.JudgeConc}
	if f.JudgeConc < 1 {
		return nil, fmt.Errorf("--judge-concurrency %d: want at least 1", f.JudgeConc)
	}
	if err := o.Check(); err != nil {
		return nil, err
	}
	if f.JudgeRubric != "" {
		b, err := os.ReadFile(f.JudgeRubric)
		if err != nil {
			return nil, fmt.Errorf("--judge-rubric: %w", err)
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("--judge-rubric %s: the file is empty", safetext.Quote(f.JudgeRubric, 200))
		}
		o.Rubric = string(b)
	}
	if f.JudgeAPIKeyEnv != "" {
		if o.APIKey = getenv(f.JudgeAPIKeyEnv); o.APIKey == "" {
			return nil, fmt.Errorf("--judge-api-key-env %s: the variable is empty or unset", f.JudgeAPIKeyEnv)
		}
	}
	return &o, nil
}
