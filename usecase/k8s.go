package usecase

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/llmbench/llmbench/k8sjob"
	"github.com/llmbench/llmbench/traces"
)

// K8sJobOptions are `llmbench k8s job`'s options: the Job's options (Job), the trace file it
// ships, and when the shards start (StartAt, else StartIn from Now).
type K8sJobOptions struct {
	Job     k8sjob.Options
	Trace   string
	StartAt string
	StartIn time.Duration
	// Now is the clock StartIn counts from (time.Now in the CLI).
	Now func() time.Time
}

// K8sJob prints the manifest of a run sharded over the pods of an Indexed Job.
func K8sJob(env *Env, ko *K8sJobOptions) error {
	if _, err := traces.ReadFile(ko.Trace, traces.ReadOptions{}); err != nil {
		return err
	}
	data, err := os.ReadFile(ko.Trace)
	if err != nil {
		return fmt.Errorf("read trace: %w", err)
	}
	ko.Job.Trace, ko.Job.TraceName = data, filepath.Base(ko.Trace)
	switch {
	case ko.StartAt != "":
		t, err := time.Parse(time.RFC3339, ko.StartAt)
		if err != nil {
			return fmt.Errorf("--start-at %q: want RFC 3339, e.g. 2026-12-01T15:00:00Z", ko.StartAt)
		}
		ko.Job.StartAt = t
	case ko.StartIn > 0:
		now := ko.Now
		if now == nil {
			now = time.Now
		}
		ko.Job.StartAt = now().Add(ko.StartIn).Truncate(time.Second)
	default:
		return fmt.Errorf("--start-in %s: must be > 0 (or give --start-at)", ko.StartIn)
	}
	m, err := k8sjob.Build(ko.Job)
	if err != nil {
		return err
	}
	return k8sjob.Write(env.Stdout, m)
}
