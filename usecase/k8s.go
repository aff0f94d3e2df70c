package usecase

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/llmbench/llmbench/internal/redact"
	"github.com/llmbench/llmbench/k8sjob"
	"github.com/llmbench/llmbench/k8srun"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
)

// K8sJobOptions are `llmbench k8s job`'s options: the Job's options (Job), the trace file it
// ships (or digests, when the pods fetch it by Job.TraceURL or read it from Job.TraceVolume),
// and when the shards start (StartAt, else StartIn from Now).
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
	m, err := ko.Manifest()
	if err != nil {
		return err
	}
	return k8sjob.Write(env.Stdout, m)
}

// Manifest checks the trace (every line, without holding it), digests it, and builds the
// run's objects.
func (ko *K8sJobOptions) Manifest() (*k8sjob.Manifest, error) {
	if _, err := traces.OpenFile(ko.Trace, traces.ReadOptions{}); err != nil {
		return nil, err
	}
	sum, err := traces.FileSHA256(ko.Trace)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	ko.Job.TraceSHA256, ko.Job.TraceName = sum, filepath.Base(ko.Trace)
	if ko.Job.TraceURL == "" && ko.Job.TraceVolume == "" {
		if ko.Job.Trace, err = os.ReadFile(ko.Trace); err != nil {
			return nil, fmt.Errorf("read trace: %w", err)
		}
	}
	switch {
	case ko.StartAt != "":
		t, err := time.Parse(time.RFC3339, ko.StartAt)
		if err != nil {
			return nil, fmt.Errorf("--start-at %q: want RFC 3339, e.g. 2026-12-01T15:00:00Z", ko.StartAt)
		}
		ko.Job.StartAt = t
	case ko.StartIn > 0:
		now := ko.Now
		if now == nil {
			now = time.Now
		}
		ko.Job.StartAt = now().Add(ko.StartIn).Truncate(time.Second)
	default:
		return nil, fmt.Errorf("--start-in %s: must be > 0 (or give --start-at)", ko.StartIn)
	}
	return k8sjob.Build(ko.Job)
}

// K8sRunOptions are `llmbench k8s run`'s options: the Job's, the kubeconfig context, and
// where the merged summary goes.
type K8sRunOptions struct {
	K8sJobOptions
	Kubeconfig, Context string
	// Out is the local results directory ("" = results/<timestamp>).
	Out         string
	Poll        time.Duration
	PullTimeout time.Duration
	Fail        FailureOptions
}

// K8sRun runs the sharded run on the cluster end to end (k8srun) and writes the merged
// summary and report into o.Out.
func K8sRun(ctx context.Context, env *Env, o *K8sRunOptions) (int, error) {
	if err := o.Fail.Check(); err != nil {
		return ExitBadInput, err
	}
	cl, err := k8srun.Connect(ctx, o.Kubeconfig, o.Context, o.Job.Namespace)
	if err != nil {
		return ExitBadInput, err
	}
	o.Job.Namespace = cl.Namespace
	m, err := o.Manifest()
	if err != nil {
		return ExitBadInput, err
	}
	fmt.Fprintf(env.Stderr, "k8s: run %s in namespace %s of context %s (%s): %d shards from %s\n",
		o.Job.Name, cl.Namespace, cl.Context, redact.URL(cl.Host), o.Job.Shards, o.Job.StartAt.UTC().Format(time.RFC3339))
	progress := env.Stderr
	if !env.ShowProgress {
		progress = nil
	}
	res, err := cl.Run(ctx, m, k8srun.Options{Name: o.Job.Name, Shards: o.Job.Shards, Progress: progress, Poll: o.Poll, PullTimeout: o.PullTimeout})
	left := fmt.Sprintf("the objects are left in namespace %s: `llmbench k8s delete %s --namespace %s` removes them", cl.Namespace, o.Job.Name, cl.Namespace)
	var pull *k8srun.PullError
	switch {
	case errors.As(err, &pull):
		return ExitRunFailed, fmt.Errorf("%w; %s", err, left)
	case errors.Is(err, k8srun.ErrInterrupted):
		return ExitInterrupted, fmt.Errorf("%w; %s", err, left)
	case err != nil:
		return ExitBadInput, fmt.Errorf("%w; %s", err, left)
	}
	return o.report(env, res, left)
}

// report writes and prints the merged summary brought back.
func (o *K8sRunOptions) report(env *Env, res *k8srun.Result, left string) (int, error) {
	out := o.Out
	if out == "" {
		out = runner.DefaultOutDir(time.Now())
	}
	sum, err := runner.WriteRemoteSummary(out, res.Summary, reports.HTMLOptions{Getenv: env.Getenv})
	if err != nil {
		return ExitBadInput, err
	}
	if err := reports.WriteTerminal(env.Stdout, sum); err != nil {
		return ExitBadInput, err
	}
	if mg := sum.Run.Merged; mg != nil {
		fmt.Fprintf(env.Stdout, "\nmerged %d of %d shards", len(mg.Merged), mg.Shards)
		if len(mg.Missing)+len(mg.Partial) > 0 {
			fmt.Fprintf(env.Stdout, " (missing %v, partial %v: %d requests dropped)", mg.Missing, mg.Partial, mg.Dropped)
		}
	}
	fmt.Fprintf(env.Stdout, "\nresults: %s (summary.json, report.html); the records are on the volume %s-results under merged/\n%s\n",
		out, o.Job.Name, left)
	return MeasuredExit(env, o.Fail, sum)
}

// K8sDeleteOptions name a run's objects to remove.
type K8sDeleteOptions struct {
	Name, Kubeconfig, Context, Namespace string
}

// K8sDelete removes every object of a run made by k8s run or k8s job.
func K8sDelete(ctx context.Context, env *Env, o *K8sDeleteOptions) (int, error) {
	cl, err := k8srun.Connect(ctx, o.Kubeconfig, o.Context, o.Namespace)
	if err != nil {
		return ExitBadInput, err
	}
	gone, err := cl.Delete(ctx, o.Name)
	for _, g := range gone {
		fmt.Fprintf(env.Stdout, "deleted %s\n", g)
	}
	if err == nil && len(gone) == 0 {
		fmt.Fprintf(env.Stdout, "no objects of a run named %s in namespace %s\n", o.Name, cl.Namespace)
	}
	if err != nil {
		return ExitBadInput, err
	}
	return ExitOK, nil
}
