package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/usecase"
)

func newK8sRunCmd(app *App) *cobra.Command {
	o := &usecase.K8sRunOptions{K8sJobOptions: usecase.K8sJobOptions{Now: time.Now}}
	var fail *failureFlags
	cmd := &cobra.Command{
		Use:   "run --trace FILE --shards N --image IMAGE --endpoint URL [-- RUN FLAGS...]",
		Short: "Run a sharded run on the current Kubernetes context end to end and bring the merged summary back",
		Long: `Check that the nodes can hold the shard pods (--cpu, --memory) beside the clock, all at
once (exit 2 when they never can), create the objects ` + "`llmbench k8s job`" + ` prints in the
kubeconfig's current context (or --context) and namespace, follow the shard pods (pending and
why: the scheduling condition, waiting reasons and warning events; running, done, failed: a
failed shard's reason and log tail), resume the merge Job once every shard has finished, wait
for it, and write the merged summary.json and report.html to --out; the records stay on the
results volume. A shard that failed is named and its requests counted as dropped, as merge
does. The shards start together or not at all: a shard pod not running by the common start
plus --start-grace, a trace fetch that fails, or a pod whose image cannot be pulled within
--pull-timeout ends the run with exit 3, naming why. Ctrl-C or SIGTERM suspends the shards
(each writes what it has), scales the clock to zero and leaves every object for inspection
(exit 130, within seconds whatever the API server does; a second Ctrl-C exits at once);
` + "`llmbench k8s delete NAME`" + ` removes them. Exit codes as run. See docs/distributed.md.`,
		Example: `  llmbench k8s run --trace prod.jsonl --shards 4 --image registry.example/llmbench:0.1 \
    --endpoint http://vllm.default.svc:8000 --start-in 2m -- --slo ttft=500ms,tpot=50ms`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Job.RunArgs, o.Fail = args, fail.opts()
			return exitStatus(usecase.K8sRun(cmd.Context(), app.env(), o))
		},
	}
	addK8sJobFlags(cmd, &o.K8sJobOptions)
	fs := cmd.Flags()
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, as kubectl)")
	fs.StringVar(&o.Context, "context", "", "kubeconfig context (default: its current context)")
	fs.StringVarP(&o.Out, "out", "o", "", "local results directory for the merged summary.json and report.html (default results/<timestamp>)")
	fs.DurationVar(&o.PullTimeout, "pull-timeout", 5*time.Minute, "end the run (exit 3) when a pod has waited this long for an image it cannot pull")
	fs.DurationVar(&o.Poll, "poll", 2*time.Second, "how often to ask the Kubernetes API for the pods' states")
	fail = addFailureFlags(fs)
	return cmd
}

func newK8sDeleteCmd(app *App) *cobra.Command {
	o := &usecase.K8sDeleteOptions{}
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Remove every object of a run made by llmbench k8s run or k8s job (its Jobs with their pods, the clock, the trace, the results volume)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			return exitStatus(usecase.K8sDelete(cmd.Context(), app.env(), o))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&o.Context, "context", "", "kubeconfig context (default: its current context)")
	fs.StringVar(&o.Namespace, "namespace", "", "namespace (default: the context's)")
	return cmd
}
