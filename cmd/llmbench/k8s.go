package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/usecase"
)

func init() { register("k8s", newK8sCmd) }

func newK8sCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Run beyond one machine on Kubernetes: print the manifest, or run it end to end",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newK8sJobCmd(app), newK8sRunCmd(app), newK8sDeleteCmd(app))
	return cmd
}

func newK8sJobCmd(app *App) *cobra.Command {
	ko := &usecase.K8sJobOptions{Now: time.Now}
	cmd := &cobra.Command{
		Use:   "job --trace FILE --shards N --image IMAGE --endpoint URL [-- RUN FLAGS...]",
		Short: "Print the manifest of a run sharded over the pods of an Indexed Job",
		Long: `Print (to stdout, for kubectl apply -f -) the manifest of a run split over N pods: a
ConfigMap with the trace (or, for a larger trace, an init container that fetches it from
--trace-url, or a claim named by --trace-volume; the pods check its SHA-256 either way), a
ReadWriteMany PersistentVolumeClaim for the results, a time server (` + "`llmbench clock`" + `, a
Deployment and a Service) the shards measure their clock offsets against, an Indexed Job whose
pod I runs ` + "`llmbench run --shard auto/N --start-at TIME`" + ` into /results/shard-I, and a
suspended Job that runs ` + "`llmbench merge`" + ` into /results/merged once resumed. Flags after -- are
passed to every shard's ` + "`llmbench run`" + `. ` + "`llmbench k8s run`" + ` does all of it through the
Kubernetes API. See docs/distributed.md.`,
		Example: `  llmbench k8s job --trace prod.jsonl --shards 4 --image registry.example/llmbench:0.1 \
    --endpoint http://vllm.default.svc:8000 --start-in 3m -- --slo ttft=500ms,tpot=50ms | kubectl apply -f -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ko.Job.RunArgs = args
			return usecase.K8sJob(app.env(), ko)
		},
	}
	addK8sJobFlags(cmd, ko)
	return cmd
}

// addK8sJobFlags are the flags k8s job and k8s run share.
func addK8sJobFlags(cmd *cobra.Command, ko *usecase.K8sJobOptions) {
	fs := cmd.Flags()
	fs.StringVar(&ko.Trace, "trace", "", "trace file: shipped in a ConfigMap (at most 1 MiB), or, with --trace-url or --trace-volume, the local copy whose SHA-256 the pods check")
	fs.StringVar(&ko.Job.TraceURL, "trace-url", "", "the pods fetch the trace from this http(s) URL (an init container runs llmbench trace fetch), for a trace larger than a ConfigMap")
	fs.StringVar(&ko.Job.TraceVolume, "trace-volume", "", "the pods read the trace from an existing PersistentVolumeClaim, CLAIM[:PATH] (PATH default: the --trace file's name)")
	fs.IntVar(&ko.Job.Shards, "shards", 2, "number of shard pods")
	fs.StringVar(&ko.Job.Image, "image", "", "llmbench image (built from the repository's Dockerfile)")
	fs.StringVar(&ko.Job.Endpoint, "endpoint", "", "the server under test, as the pods reach it (no user info or query: the manifest is plain text)")
	fs.StringVar(&ko.Job.APIKeySecret, "api-key-secret", "", "Kubernetes Secret NAME[:KEY] (key default api-key) holding the endpoint's API key; the shards read it into $"+"LLMBENCH_SHARD_API_KEY and pass --api-key-env (--header after -- is refused: header values are secrets)")
	fs.StringVar(&ko.Job.Name, "name", "llmbench", "prefix of every object's name")
	fs.StringVar(&ko.Job.Namespace, "namespace", "", "namespace of every object (default: the kubeconfig context's)")
	fs.StringVar(&ko.StartAt, "start-at", "", "common start of the shards, RFC 3339 (default: --start-in from now)")
	fs.DurationVar(&ko.StartIn, "start-in", 5*time.Minute, "start the shards this long after the manifest is printed (time to apply it and pull the image)")
	fs.StringVar(&ko.Job.Storage, "storage", "1Gi", "size of the results volume")
	fs.StringVar(&ko.Job.StorageClass, "storage-class", "", "storage class of the results volume (one that offers ReadWriteMany; default: the cluster's)")
	fs.StringVar(&ko.Job.CPU, "cpu", "2", "CPU request and limit of each shard pod, every container of it included (the merge pod: at most 1)")
	fs.StringVar(&ko.Job.Memory, "memory", "", "memory request and limit of each shard pod and the merge pod, every container included (default: none)")
	fs.DurationVar(&ko.Job.StartGrace, "start-grace", usecase.DefaultStartGrace, "a shard ready later than this past the common start does not start (exit 4) and fails the shards' Job: the shards start together or not at all")
	_ = cmd.MarkFlagRequired("trace")
}
