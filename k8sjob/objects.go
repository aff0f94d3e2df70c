package k8sjob

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// meta is the metadata of the run's object named o.Name-suffix, labeled with its component.
func (o *Options) meta(suffix, component string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: o.Name + "-" + suffix, Namespace: o.Namespace,
		Labels: map[string]string{"app.kubernetes.io/name": "llmbench", "app.kubernetes.io/instance": o.Name, "app.kubernetes.io/component": component}}
}

// traceConfigMap holds the trace file, as text when it is text, else as binary data.
func (o *Options) traceConfigMap() *corev1.ConfigMap {
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: o.meta("trace", "trace")}
	if isText(o.Trace) {
		cm.Data = map[string]string{o.TraceName: string(o.Trace)}
	} else {
		cm.BinaryData = map[string][]byte{o.TraceName: o.Trace}
	}
	return cm
}

// resultsClaim is the volume every shard writes its results directory to, and merge reads.
func (o *Options) resultsClaim() *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: o.meta("results", "results"),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(o.Storage)}},
		},
	}
	if o.StorageClass != "" {
		pvc.Spec.StorageClassName = &o.StorageClass
	}
	return pvc
}

// clockObjects are the clock reference the shards measure their offsets against (llmbench
// clock): its Deployment and the Service in front of it.
func (o *Options) clockObjects() (*appsv1.Deployment, *corev1.Service) {
	clockLabels := map[string]string{"app.kubernetes.io/instance": o.Name, "app.kubernetes.io/component": "clock"}
	one := int32(1)
	clock := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: o.meta("clock", "clock"),
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: clockLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: clockLabels},
				Spec: corev1.PodSpec{
					SecurityContext: podSecurity(),
					Containers: []corev1.Container{{
						Name: "clock", Image: o.Image, Command: []string{binary},
						Args:  []string{"clock", "--addr", ":" + strconv.Itoa(clockPort)},
						Ports: []corev1.ContainerPort{{Name: "clock", ContainerPort: clockPort}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
							HTTPGet: &corev1.HTTPGetAction{Path: "/llmbench/time", Port: intstr.FromString("clock")}}},
						Resources: resources(ClockCPU, ""),
					}},
				},
			},
		},
	}
	clockSvc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: o.meta("clock", "clock"),
		Spec: corev1.ServiceSpec{Selector: clockLabels,
			Ports: []corev1.ServicePort{{Name: "clock", Port: clockPort, TargetPort: intstr.FromString("clock")}}},
	}
	return clock, clockSvc
}

// shardArgs are a shard's llmbench run command line and environment: the trace, the endpoint,
// the common start, the clock reference at clockURL, its results directory on the volume,
// the API key from a Secret when o names one, and o.RunArgs.
func (o *Options) shardArgs(clockURL string) ([]string, []corev1.EnvVar) {
	runArgs := append([]string{"run", "--trace", o.tracePath(), "--endpoint", o.Endpoint,
		"--shard", fmt.Sprintf("auto/%d", o.Shards), "--start-at", o.StartAt.UTC().Format(time.RFC3339),
		"--clock-ref", clockURL, "--clock-wait", clockWait, "--no-progress",
		// $(JOB_COMPLETION_INDEX) is expanded by the kubelet from the variable the Job sets.
		"--out", resultsDir + "/shard-$(JOB_COMPLETION_INDEX)"}, o.traceChecks()...)
	if o.StartGrace > 0 {
		runArgs = append(runArgs, "--start-grace", o.StartGrace.String())
	}
	runArgs = append(runArgs, o.RunArgs...)
	var env []corev1.EnvVar
	if o.APIKeySecret != "" {
		name, key, _ := strings.Cut(o.APIKeySecret, ":")
		if key == "" {
			key = "api-key"
		}
		env = []corev1.EnvVar{{Name: apiKeyEnv, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}}}
		runArgs = append(runArgs, "--api-key-env", apiKeyEnv)
	}
	return runArgs, env
}

// shardsJob is the indexed Job of o.Shards pods, one per shard, all at once.
func (o *Options) shardsJob(clockURL string) *batchv1.Job {
	n := int32(o.Shards)
	zero := int32(0)
	indexed := batchv1.IndexedCompletion
	runArgs, env := o.shardArgs(clockURL)
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: o.meta("shards", "shard"),
		Spec: batchv1.JobSpec{
			CompletionMode: &indexed, Completions: &n, Parallelism: &n,
			// A shard that fails is not retried (a rerun would start after the common start)
			// and does not stop the others: merge names it and counts its requests as dropped.
			// One that could not start (no trace, or late) fails the whole Job instead.
			BackoffLimitPerIndex: &zero,
			PodFailurePolicy:     o.startFailures(),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/instance": o.Name, "app.kubernetes.io/component": "shard"}},
				Spec: corev1.PodSpec{
					RestartPolicy:   corev1.RestartPolicyNever,
					SecurityContext: podSecurity(),
					InitContainers:  o.initContainers(o.shardResources()),
					Containers: []corev1.Container{{
						Name: ShardContainer, Image: o.Image, Command: []string{binary}, Args: runArgs, Env: env,
						VolumeMounts: mounts(), Resources: o.shardResources(),
					}},
					Volumes: o.volumes(),
				},
			},
		},
	}
}

// ShardContainer is the name of a shard pod's llmbench container.
const ShardContainer = "llmbench"

// startFailures is the shards' pod failure policy: a shard that could not start fails the
// Job, whose controller then stops the other shards, so that no shard replays the schedule
// alone. A shard could not start when its trace fetch failed (no trace, or another file) or
// when it was ready past the start plus the grace (LateStartExit).
func (o *Options) startFailures() *batchv1.PodFailurePolicy {
	fetch, shard := FetchContainer, ShardContainer
	rules := []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: &shard,
			Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{LateStartExit}}}}
	if o.TraceURL != "" {
		rules = append(rules, batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: &fetch,
				Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{0}}})
	}
	return &batchv1.PodFailurePolicy{Rules: rules}
}

// SummaryPrefix starts the line on which `llmbench merge --print-summary-json` prints the
// merged summary.json: `llmbench k8s run` reads it from the merge pod's log.
const SummaryPrefix = "llmbench-summary-json: "

// mergeJob is the suspended Job that merges the shards' results directories (llmbench merge).
func (o *Options) mergeJob() *batchv1.Job {
	zero := int32(0)
	mergeArgs := append([]string{"merge", "-o", resultsDir + "/merged", "--trace", o.tracePath(), "--print-summary-json"}, o.traceChecks()...)
	for i := range o.Shards {
		mergeArgs = append(mergeArgs, fmt.Sprintf("%s/shard-%d", resultsDir, i))
	}
	suspend := true
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: o.meta("merge", "merge"),
		Spec: batchv1.JobSpec{
			// Suspended: resume it once the shards' Job is done (docs/distributed.md).
			Suspend:      &suspend,
			BackoffLimit: &zero,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/instance": o.Name, "app.kubernetes.io/component": "merge"}},
				Spec: corev1.PodSpec{
					RestartPolicy:   corev1.RestartPolicyNever,
					SecurityContext: podSecurity(),
					InitContainers:  o.initContainers(o.mergeResources()),
					Containers: []corev1.Container{{
						Name: "merge", Image: o.Image, Command: []string{binary}, Args: mergeArgs,
						VolumeMounts: mounts(), Resources: o.mergeResources(),
					}},
					Volumes: o.volumes(),
				},
			},
		},
	}
}
