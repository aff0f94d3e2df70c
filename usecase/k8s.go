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
// summary and report into o.Out. Before creating anything it checks that the nodes can hold
// the shard pods (exit 2 when they never can). The first interrupt (Ctrl-C, SIGTERM) ends it
// within seconds whatever the API server does: the shards' Job suspended, the clock scaled to
// zero, the objects left and what to do next printed, exit 130; the second exits at once.
func K8sRun(ctx context.Context, env *Env, o *K8sRunOptions) (int, error) {
	if err := o.Fail.Check(); err != nil {
		return ExitBadInput, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := env.interrupts()
	in.Stopping = "stopping the run: suspending the shards' Job and the clock, then saying what is left"
	in.Exiting = fmt.Sprintf("whatever was created is left as it is (the shards may still run): `llmbench k8s delete %s` removes it (with --namespace and --context as given)", o.Job.Name)
	defer in.Watch(cancel, func() {}, 0)()

	cl, err := k8srun.Connect(ctx, o.Kubeconfig, o.Context, o.Job.Namespace)
	if err != nil {
		return o.early(env, err)
	}
	o.Job.Namespace = cl.Namespace
	m, err := o.Manifest()
	if err != nil {
		return ExitBadInput, err
	}
	if err := cl.CheckFit(ctx, m, o.Job.Shards, env.Stderr); err != nil {
		return o.early(env, err)
	}
	fmt.Fprintf(env.Stderr, "k8s: run %s in namespace %s of context %s (%s): %d shards from %s\n",
		o.Job.Name, cl.Namespace, cl.Context, redact.URL(cl.Host), o.Job.Shards, o.Job.StartAt.UTC().Format(time.RFC3339))
	progress := env.Stderr
	if !env.ShowProgress {
		progress = nil
	}
	res, err := cl.Run(ctx, m, k8srun.Options{Name: o.Job.Name, Shards: o.Job.Shards, Progress: progress, Poll: o.Poll,
		PullTimeout: o.PullTimeout, StartAt: o.Job.StartAt, StartGrace: o.startGrace()})
	if err != nil {
		return o.ended(env, cl, res, err)
	}
	for _, l := range res.Stopped {
		fmt.Fprintf(env.Stderr, "k8s: %s\n", l)
	}
	return o.report(env, res, o.left(cl.Namespace))
}

func (o *K8sRunOptions) startGrace() time.Duration {
	if o.Job.StartGrace > 0 {
		return o.Job.StartGrace
	}
	return DefaultStartGrace
}

// left says where the run's objects are and how to remove them.
func (o *K8sRunOptions) left(ns string) string {
	return fmt.Sprintf("the objects are left in namespace %s: `llmbench k8s delete %s --namespace %s` removes them", ns, o.Job.Name, ns)
}

// early is the exit of a run that ended before any object was created.
func (o *K8sRunOptions) early(env *Env, err error) (int, error) {
	var fit *k8srun.FitError
	switch {
	case env.interrupted() || errors.Is(err, context.Canceled):
		return ExitInterrupted, fmt.Errorf("interrupted before the run's objects were created: nothing was created (%v)", err)
	case errors.As(err, &fit):
		return ExitBadInput, fmt.Errorf("the shard pods do not fit the cluster, nothing was created: %w", err)
	}
	return ExitBadInput, err
}

// ended prints what a run that ended early left (the shards' states, what was stopped, what
// to do next) and returns its exit status: 130 interrupted, 3 when the shards could not start
// together or an image cannot be pulled, 2 otherwise.
func (o *K8sRunOptions) ended(env *Env, cl *k8srun.Cluster, res *k8srun.Result, err error) (int, error) {
	ns, name := cl.Namespace, o.Job.Name
	if res != nil {
		if len(res.Shards) > 0 {
			fmt.Fprintf(env.Stderr, "k8s: shards: %s\n", k8srun.Tally(res.Shards))
		}
		for _, l := range res.Stopped {
			fmt.Fprintf(env.Stderr, "k8s: %s\n", l)
		}
	}
	del := fmt.Sprintf("`llmbench k8s delete %s --namespace %s` removes what is left of its objects", name, ns)
	var pull *k8srun.PullError
	var start *k8srun.StartError
	switch {
	case errors.As(err, &pull), errors.As(err, &start):
		return ExitRunFailed, fmt.Errorf("%w; nothing was measured: %s, then start it again (a later --start-in leaves the pods more time)", err, del)
	case !errors.Is(err, k8srun.ErrInterrupted) && !env.interrupted():
		return ExitBadInput, fmt.Errorf("%w; %s", err, del)
	}
	next := del
	switch {
	case res != nil && res.Merging:
		next = fmt.Sprintf("the merge Job %s-merge runs to its end on its own: `kubectl -n %s logs job/%s-merge` shows the merged summary, and the records go to merged/ on the volume %s-results; %s",
			name, ns, name, name, del)
	case res != nil: // the objects exist
		next = fmt.Sprintf("what the shards wrote is on the volume %s-results (shard-I/ each): `kubectl -n %s patch job %s-merge --type=merge -p '{\"spec\":{\"suspend\":false}}'` merges it into merged/ there (the merge names the shards that did not finish) and `kubectl -n %s logs job/%s-merge` shows the merged summary; %s",
			name, ns, name, ns, name, del)
	}
	return ExitInterrupted, fmt.Errorf("%w; %s", err, next)
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
