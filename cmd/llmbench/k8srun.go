package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/k8srun"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/runner"
)

type k8sRunOptions struct {
	kubeconfig, context, out string
	poll, pullTimeout        time.Duration
	failure                  *failureFlags
}

func newK8sRunCmd(app *App) *cobra.Command {
	ko := &k8sJobOptions{now: time.Now}
	ro := &k8sRunOptions{}
	cmd := &cobra.Command{
		Use:   "run --trace FILE --shards N --image IMAGE --endpoint URL [-- RUN FLAGS...]",
		Short: "Run a sharded run on the current Kubernetes context end to end and bring the merged summary back",
		Long: `Create the objects ` + "`llmbench k8s job`" + ` prints in the kubeconfig's current context (or
--context) and namespace, follow the shard pods (pending, running, done, failed; a failed
shard's reason and log tail), resume the merge Job once every shard has finished, wait for it,
and write the merged summary.json and report.html to --out; the records stay on the results
volume. A shard that failed is named and its requests counted as dropped, as merge does. A pod
whose image cannot be pulled ends the run after --pull-timeout (exit 3). Ctrl-C suspends the
shards (each writes what it has) and leaves every object for inspection; ` + "`llmbench k8s delete NAME`" + `
removes them. Exit codes as run. See docs/distributed.md.`,
		Example: `  llmbench k8s run --trace prod.jsonl --shards 4 --image registry.example/llmbench:0.1 \
    --endpoint http://vllm.default.svc:8000 --start-in 2m -- --slo ttft=500ms,tpot=50ms`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ko.o.RunArgs = args
			if err := ro.failure.check(); err != nil {
				return err
			}
			return runK8sRun(cmd, app, ko, ro)
		},
	}
	ko.addFlags(cmd)
	fs := cmd.Flags()
	fs.StringVar(&ro.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, as kubectl)")
	fs.StringVar(&ro.context, "context", "", "kubeconfig context (default: its current context)")
	fs.StringVarP(&ro.out, "out", "o", "", "local results directory for the merged summary.json and report.html (default results/<timestamp>)")
	fs.DurationVar(&ro.pullTimeout, "pull-timeout", 5*time.Minute, "end the run (exit 3) when a pod has waited this long for an image it cannot pull")
	fs.DurationVar(&ro.poll, "poll", 2*time.Second, "how often to ask the Kubernetes API for the pods' states")
	ro.failure = addFailureFlags(fs)
	return cmd
}

func runK8sRun(cmd *cobra.Command, app *App, ko *k8sJobOptions, ro *k8sRunOptions) error {
	ctx := cmd.Context()
	cl, err := k8srun.Connect(ctx, ro.kubeconfig, ro.context, ko.o.Namespace)
	if err != nil {
		return &exitError{exitBadInput, err}
	}
	ko.o.Namespace = cl.Namespace
	m, err := ko.manifest()
	if err != nil {
		return &exitError{exitBadInput, err}
	}
	fmt.Fprintf(app.Stderr, "k8s: run %s in namespace %s of context %s (%s): %d shards from %s\n",
		ko.o.Name, cl.Namespace, cl.Context, cl.Host, ko.o.Shards, ko.o.StartAt.UTC().Format(time.RFC3339))
	progress := io.Writer(io.Discard)
	if app.showProgress() {
		progress = app.Stderr
	}
	res, err := cl.Run(ctx, m, k8srun.Options{Name: ko.o.Name, Shards: ko.o.Shards, Progress: progress, Poll: ro.poll, PullTimeout: ro.pullTimeout})
	left := fmt.Sprintf("the objects are left in namespace %s: `llmbench k8s delete %s --namespace %s` removes them", cl.Namespace, ko.o.Name, cl.Namespace)
	var pull *k8srun.PullError
	switch {
	case errors.As(err, &pull):
		return &exitError{exitRunFailed, fmt.Errorf("%w; %s", err, left)}
	case errors.Is(err, k8srun.ErrInterrupted):
		return &exitError{exitInterrupted, fmt.Errorf("%w; %s", err, left)}
	case err != nil:
		return fmt.Errorf("%w; %s", err, left)
	}
	out := ro.out
	if out == "" {
		out = runner.DefaultOutDir(time.Now())
	}
	sum, err := runner.WriteRemoteSummary(out, res.Summary, reports.HTMLOptions{Getenv: app.Getenv})
	if err != nil {
		return err
	}
	if err := reports.WriteTerminal(app.Stdout, sum); err != nil {
		return err
	}
	if mg := sum.Run.Merged; mg != nil {
		fmt.Fprintf(app.Stdout, "\nmerged %d of %d shards", len(mg.Merged), mg.Shards)
		if len(mg.Missing)+len(mg.Partial) > 0 {
			fmt.Fprintf(app.Stdout, " (missing %v, partial %v: %d requests dropped)", mg.Missing, mg.Partial, mg.Dropped)
		}
	}
	fmt.Fprintf(app.Stdout, "\nresults: %s (summary.json, report.html); the records are on the volume %s-results under merged/\n%s\n",
		out, ko.o.Name, left)
	return measuredExit(app, nil, ro.failure, sum)
}

func newK8sDeleteCmd(app *App) *cobra.Command {
	var kubeconfig, kubeContext, namespace string
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Remove every object of a run made by llmbench k8s run or k8s job (its Jobs with their pods, the clock, the trace, the results volume)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := k8srun.Connect(cmd.Context(), kubeconfig, kubeContext, namespace)
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			gone, err := cl.Delete(cmd.Context(), args[0])
			for _, g := range gone {
				fmt.Fprintf(app.Stdout, "deleted %s\n", g)
			}
			if err == nil && len(gone) == 0 {
				fmt.Fprintf(app.Stdout, "no objects of a run named %s in namespace %s\n", args[0], cl.Namespace)
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&kubeContext, "context", "", "kubeconfig context (default: its current context)")
	fs.StringVar(&namespace, "namespace", "", "namespace (default: the context's)")
	return cmd
}
