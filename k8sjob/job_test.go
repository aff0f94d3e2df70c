package k8sjob

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func testOptions() Options {
	return Options{Image: "registry.example/llmbench:0.1", TraceName: "t.jsonl",
		Trace:  []byte(`{"id":"a","arrival_s":0,"input_tokens":10,"output_tokens":5}` + "\n"),
		Shards: 4, StartAt: time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), Endpoint: "http://vllm:8000",
		RunArgs: []string{"--slo", "ttft=500ms"}, Namespace: "bench"}
}

// decode reads the printed manifest strictly (unknown or misspelt fields are errors) back
// into the k8s.io/api types, by kind.
func decode(t *testing.T, out []byte) []any {
	t.Helper()
	var objs []any
	for i, doc := range strings.Split(string(out), "\n---\n") {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 ConfigMap":
			obj = &corev1.ConfigMap{}
		case "v1 PersistentVolumeClaim":
			obj = &corev1.PersistentVolumeClaim{}
		case "v1 Service":
			obj = &corev1.Service{}
		case "apps/v1 Deployment":
			obj = &appsv1.Deployment{}
		case "batch/v1 Job":
			obj = &batchv1.Job{}
		default:
			t.Fatalf("document %d: unexpected %s %s", i, tm.APIVersion, tm.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("document %d (%s): strict decode: %v", i, tm.Kind, err)
		}
		objs = append(objs, obj)
	}
	return objs
}

func TestManifestDecodesStrictlyIntoTheAPITypes(t *testing.T) {
	m, err := Build(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, m); err != nil {
		t.Fatal(err)
	}
	objs := decode(t, b.Bytes())
	want := m.Objects()
	if len(objs) != len(want) {
		t.Fatalf("%d documents, want %d", len(objs), len(want))
	}
	for i := range want {
		if !equality.Semantic.DeepEqual(objs[i], want[i]) {
			t.Errorf("document %d does not decode to the object built:\n%+v\n%+v", i, objs[i], want[i])
		}
	}
	job := objs[4].(*batchv1.Job)
	s := job.Spec
	if *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 4 || *s.Parallelism != 4 || s.BackoffLimit != nil || *s.BackoffLimitPerIndex != 0 {
		t.Fatalf("shards job spec %+v", s)
	}
	c := s.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"run --trace /trace/t.jsonl --endpoint http://vllm:8000 --shard auto/4 --start-at 2026-12-01T15:00:00Z",
		"--clock-ref http://llmbench-clock:9000", "--out /results/shard-$(JOB_COMPLETION_INDEX)", "--slo ttft=500ms"} {
		if !strings.Contains(args, want) {
			t.Errorf("shard args %q lack %q", args, want)
		}
	}
	if s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever || job.Namespace != "bench" {
		t.Fatalf("restart %s namespace %q", s.Template.Spec.RestartPolicy, job.Namespace)
	}
	merge := objs[5].(*batchv1.Job)
	if !*merge.Spec.Suspend || !strings.Contains(strings.Join(merge.Spec.Template.Spec.Containers[0].Args, " "), "/results/shard-0 /results/shard-1 /results/shard-2 /results/shard-3") {
		t.Fatalf("merge job %+v", merge.Spec)
	}
	if cm := objs[0].(*corev1.ConfigMap); cm.Data["t.jsonl"] != string(testOptions().Trace) {
		t.Fatalf("trace ConfigMap %+v", cm.Data)
	}
}

func TestBinaryTraceGoesToBinaryData(t *testing.T) {
	o := testOptions()
	o.TraceName, o.Trace = "t.msgpack", []byte{0x93, 0x00, 0xff}
	m, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if m.Trace.Data != nil || !bytes.Equal(m.Trace.BinaryData["t.msgpack"], o.Trace) {
		t.Fatalf("configmap %+v", m.Trace)
	}
	var b bytes.Buffer
	if err := Write(&b, m); err != nil {
		t.Fatal(err)
	}
	if cm := decode(t, b.Bytes())[0].(*corev1.ConfigMap); !bytes.Equal(cm.BinaryData["t.msgpack"], o.Trace) {
		t.Fatal("binary trace did not survive the YAML")
	}
}

func TestBuildRefusesBadOptions(t *testing.T) {
	for name, c := range map[string]struct {
		change func(*Options)
		want   string
	}{
		"image":    {func(o *Options) { o.Image = "" }, "--image"},
		"shards":   {func(o *Options) { o.Shards = 0 }, "--shards"},
		"endpoint": {func(o *Options) { o.Endpoint = "" }, "--endpoint"},
		"start":    {func(o *Options) { o.StartAt = time.Time{} }, "start time"},
		"name":     {func(o *Options) { o.Name = "Bad_Name" }, "DNS label"},
		"big":      {func(o *Options) { o.Trace = bytes.Repeat([]byte("x"), 1<<20+1) }, "1 MiB"},
		"storage":  {func(o *Options) { o.Storage = "lots" }, "--storage"},
		"path":     {func(o *Options) { o.TraceName = "../t.jsonl" }, "file name"},
		"header":   {func(o *Options) { o.RunArgs = []string{"--header", "Authorization: Bearer SECRETtok"} }, "--api-key-secret"},
		"header=":  {func(o *Options) { o.RunArgs = []string{"--header=X-Key: SECRETtok"} }, "--api-key-secret"},
		"userinfo": {func(o *Options) { o.Endpoint = "http://alice:SECRETpw@10.0.0.5:8000" }, "user info"},
		"query":    {func(o *Options) { o.Endpoint = "http://10.0.0.5:8000/v1?api-key=SECRETq" }, "query"},
		"secret":   {func(o *Options) { o.APIKeySecret = "Bad Name" }, "--api-key-secret"},
	} {
		o := testOptions()
		c.change(&o)
		_, err := Build(o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one naming %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: the error repeats the secret: %v", name, err)
		}
	}
	o := testOptions()
	o.StorageClass, o.Name = "nfs", "bench-7"
	m, err := Build(o)
	if err != nil || *m.Results.Spec.StorageClassName != "nfs" || m.Shards.Name != "bench-7-shards" {
		t.Fatal(fmt.Sprint(m.Results.Spec, err))
	}
}

// TestAPIKeyComesFromASecret: with --api-key-secret the key is read from the Secret into the
// shard pods' environment and passed by name; the manifest holds no key.
func TestAPIKeyComesFromASecret(t *testing.T) {
	o := testOptions()
	o.APIKeySecret = "llm-key"
	m, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Shards.Spec.Template.Spec.Containers[0]
	if len(c.Env) != 1 || c.Env[0].Name != apiKeyEnv || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.SecretKeyRef == nil ||
		c.Env[0].ValueFrom.SecretKeyRef.Name != "llm-key" || c.Env[0].ValueFrom.SecretKeyRef.Key != "api-key" {
		t.Fatalf("env %+v", c.Env)
	}
	args := strings.Join(c.Args, " ")
	if !strings.Contains(args, "--api-key-env "+apiKeyEnv) {
		t.Fatalf("args %q do not pass the key by name", args)
	}
	o.APIKeySecret = "llm-key:token"
	if m, err = Build(o); err != nil || m.Shards.Spec.Template.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef.Key != "token" {
		t.Fatalf("NAME:KEY: %v", err)
	}
}

// TestEveryContainerStaysWithinCPUAndMemory: on the printed manifest, every container of every
// pod (the trace's fetch init container included) requests and limits at most --cpu and
// --memory, and a shard pod's request, as the scheduler counts it (the larger of its
// containers' sum and its largest init container), is exactly --cpu: with --cpu 500m and
// --trace-url the fetch container no longer asks for a whole CPU.
func TestEveryContainerStaysWithinCPUAndMemory(t *testing.T) {
	for _, c := range []struct{ cpu, memory, url string }{
		{"500m", "", "https://traces.example/t.jsonl"},
		{"250m", "256Mi", "https://traces.example/t.jsonl"},
		{"3", "2Gi", ""},
		{"2", "", "https://traces.example/t.jsonl"},
	} {
		o := testOptions()
		o.CPU, o.Memory = c.cpu, c.memory
		if c.url != "" {
			o.TraceURL, o.TraceSHA256, o.Trace = c.url, strings.Repeat("ab", 32), nil
		}
		m, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := Write(&b, m); err != nil {
			t.Fatal(err)
		}
		cpu, mem := resource.MustParse(c.cpu), resource.Quantity{}
		if c.memory != "" {
			mem = resource.MustParse(c.memory)
		}
		for _, obj := range decode(t, b.Bytes()) {
			job, ok := obj.(*batchv1.Job)
			if !ok {
				continue
			}
			spec := job.Spec.Template.Spec
			if c.url != "" && len(spec.InitContainers) != 1 {
				t.Fatalf("%s: init containers %+v", job.Name, spec.InitContainers)
			}
			var sum resource.Quantity
			for _, ct := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
				for _, l := range []corev1.ResourceList{ct.Resources.Requests, ct.Resources.Limits} {
					if q := l[corev1.ResourceCPU]; q.IsZero() || q.Cmp(cpu) > 0 {
						t.Errorf("--cpu %s: %s/%s asks for %s CPU", c.cpu, job.Name, ct.Name, q.String())
					}
					if q, ok := l[corev1.ResourceMemory]; (c.memory == "") == ok || (ok && q.Cmp(mem) > 0) {
						t.Errorf("--memory %q: %s/%s asks for %v memory", c.memory, job.Name, ct.Name, l)
					}
				}
			}
			for _, ct := range spec.Containers {
				sum.Add(ct.Resources.Requests[corev1.ResourceCPU])
			}
			if job.Name == "llmbench-shards" && sum.Cmp(cpu) != 0 {
				t.Errorf("--cpu %s: a shard pod requests %s", c.cpu, sum.String())
			}
		}
	}
}

// TestShardsStartTogetherOrNotAtAll: the shards' Job fails as a whole when a shard exits 4 (it
// was ready past the start plus --start-grace, which every shard is given) or its trace fetch
// fails; other failures only fail their index.
func TestShardsStartTogetherOrNotAtAll(t *testing.T) {
	o := testOptions()
	o.StartGrace = 15 * time.Second
	o.TraceURL, o.TraceSHA256, o.Trace = "https://traces.example/t.jsonl", strings.Repeat("cd", 32), nil
	m, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, m); err != nil {
		t.Fatal(err)
	}
	var shards *batchv1.Job
	for _, obj := range decode(t, b.Bytes()) {
		if j, ok := obj.(*batchv1.Job); ok && j.Name == "llmbench-shards" {
			shards = j
		}
	}
	if args := strings.Join(shards.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--start-grace 15s") {
		t.Errorf("shard args %q lack --start-grace 15s", args)
	}
	pfp := shards.Spec.PodFailurePolicy
	if pfp == nil || len(pfp.Rules) != 2 {
		t.Fatalf("pod failure policy %+v", pfp)
	}
	late, fetch := pfp.Rules[0], pfp.Rules[1]
	if late.Action != batchv1.PodFailurePolicyActionFailJob || *late.OnExitCodes.ContainerName != ShardContainer ||
		late.OnExitCodes.Operator != batchv1.PodFailurePolicyOnExitCodesOpIn || fmt.Sprint(late.OnExitCodes.Values) != "[4]" {
		t.Errorf("late-start rule %+v", late)
	}
	if fetch.Action != batchv1.PodFailurePolicyActionFailJob || *fetch.OnExitCodes.ContainerName != FetchContainer ||
		fetch.OnExitCodes.Operator != batchv1.PodFailurePolicyOnExitCodesOpNotIn || fmt.Sprint(fetch.OnExitCodes.Values) != "[0]" {
		t.Errorf("fetch rule %+v", fetch)
	}
	for _, bad := range []func(*Options){
		func(o *Options) { o.CPU = "0" },
		func(o *Options) { o.CPU = "lots" },
		func(o *Options) { o.Memory = "-1Gi" },
		func(o *Options) { o.StartGrace = -time.Second },
	} {
		o := testOptions()
		bad(&o)
		if _, err := Build(o); err == nil {
			t.Errorf("%+v: accepted", o)
		}
	}
}
