package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/k8sjob"
	"github.com/llmbench/llmbench/traces"
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

type k8sJobOptions struct {
	o       k8sjob.Options
	trace   string
	startAt string
	startIn time.Duration
	now     func() time.Time
}

func newK8sJobCmd(app *App) *cobra.Command {
	ko := &k8sJobOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "job --trace FILE --shards N --image IMAGE --endpoint URL [-- RUN FLAGS...]",
		Short: "Print the manifest of a run sharded over the pods of an Indexed Job",
		Long: `Print (to stdout, for kubectl apply -f -) the manifest of a run split over N pods: a
ConfigMap with the trace, a ReadWriteMany PersistentVolumeClaim for the results, a time server
(` + "`llmbench clock`" + `, a Deployment and a Service) the shards measure their clock offsets against,
an Indexed Job whose pod I runs ` + "`llmbench run --shard auto/N --start-at TIME`" + ` into
/results/shard-I, and a suspended Job that runs ` + "`llmbench merge`" + ` into /results/merged once
resumed. Flags after -- are passed to every shard's ` + "`llmbench run`" + `. See docs/distributed.md.`,
		Example: `  llmbench k8s job --trace prod.jsonl --shards 4 --image registry.example/llmbench:0.1 \
    --endpoint http://vllm.default.svc:8000 --start-in 3m -- --slo ttft=500ms,tpot=50ms | kubectl apply -f -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ko.o.RunArgs = args
			return runK8sJob(app, ko)
		},
	}
	ko.addFlags(cmd)
	return cmd
}

// addFlags are the flags k8s job and k8s run share.
func (ko *k8sJobOptions) addFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&ko.trace, "trace", "", "trace file: shipped in a ConfigMap (at most 1 MiB), or, with --trace-url or --trace-volume, the local copy whose SHA-256 the pods check")
	fs.StringVar(&ko.o.TraceURL, "trace-url", "", "the pods fetch the trace from this http(s) URL (an init container runs llmbench trace fetch), for a trace larger than a ConfigMap")
	fs.StringVar(&ko.o.TraceVolume, "trace-volume", "", "the pods read the trace from an existing PersistentVolumeClaim, CLAIM[:PATH] (PATH default: the --trace file's name)")
	fs.IntVar(&ko.o.Shards, "shards", 2, "number of shard pods")
	fs.StringVar(&ko.o.Image, "image", "", "llmbench image (built from the repository's Dockerfile)")
	fs.StringVar(&ko.o.Endpoint, "endpoint", "", "the server under test, as the pods reach it (no user info or query: the manifest is plain text)")
	fs.StringVar(&ko.o.APIKeySecret, "api-key-secret", "", "Kubernetes Secret NAME[:KEY] (key default api-key) holding the endpoint's API key; the shards read it into $"+"LLMBENCH_SHARD_API_KEY and pass --api-key-env (--header after -- is refused: header values are secrets)")
	fs.StringVar(&ko.o.Name, "name", "llmbench", "prefix of every object's name")
	fs.StringVar(&ko.o.Namespace, "namespace", "", "namespace of every object (default: the kubeconfig context's)")
	fs.StringVar(&ko.startAt, "start-at", "", "common start of the shards, RFC 3339 (default: --start-in from now)")
	fs.DurationVar(&ko.startIn, "start-in", 5*time.Minute, "start the shards this long after the manifest is printed (time to apply it and pull the image)")
	fs.StringVar(&ko.o.Storage, "storage", "1Gi", "size of the results volume")
	fs.StringVar(&ko.o.StorageClass, "storage-class", "", "storage class of the results volume (one that offers ReadWriteMany; default: the cluster's)")
	fs.StringVar(&ko.o.CPU, "cpu", "2", "CPU request and limit of each shard pod")
	_ = cmd.MarkFlagRequired("trace")
}

func runK8sJob(app *App, ko *k8sJobOptions) error {
	m, err := ko.manifest()
	if err != nil {
		return err
	}
	return k8sjob.Write(app.Stdout, m)
}

// manifest checks the trace and builds the run's objects.
func (ko *k8sJobOptions) manifest() (*k8sjob.Manifest, error) {
	// Every line is checked here, as run would, without holding the trace.
	if _, err := traces.OpenFile(ko.trace, traces.ReadOptions{}); err != nil {
		return nil, err
	}
	sum, err := traces.FileSHA256(ko.trace)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	ko.o.TraceSHA256, ko.o.TraceName = sum, filepath.Base(ko.trace)
	if ko.o.TraceURL == "" && ko.o.TraceVolume == "" {
		if ko.o.Trace, err = os.ReadFile(ko.trace); err != nil {
			return nil, fmt.Errorf("read trace: %w", err)
		}
	}
	switch {
	case ko.startAt != "":
		t, err := time.Parse(time.RFC3339, ko.startAt)
		if err != nil {
			return nil, fmt.Errorf("--start-at %q: want RFC 3339, e.g. 2026-12-01T15:00:00Z", ko.startAt)
		}
		ko.o.StartAt = t
	case ko.startIn > 0:
		ko.o.StartAt = ko.now().Add(ko.startIn).Truncate(time.Second)
	default:
		return nil, fmt.Errorf("--start-in %s: must be > 0 (or give --start-at)", ko.startIn)
	}
	return k8sjob.Build(ko.o)
}
