package main

import (
	"os"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/usecase"
	batchv1 "k8s.io/api/batch/v1"

	"github.com/llmbench/llmbench/traces"
	"sigs.k8s.io/yaml"
)

var k8sExampleArgs = []string{"k8s", "job", "--trace", "testdata/k8s-example.jsonl", "--shards", "3",
	"--image", "registry.example/llmbench:0.1", "--endpoint", "http://vllm.default.svc:8000",
	"--start-at", "2026-12-01T15:00:00Z", "--", "--slo", "ttft=500ms,tpot=50ms"}

// TestK8sJobDocExampleIsRealOutput: the manifest in docs/distributed.md ("On Kubernetes") is
// what the command prints.
func TestK8sJobDocExampleIsRealOutput(t *testing.T) {
	app := newTestApp(nil)
	mustRun(t, app, k8sExampleArgs...)
	readme, err := os.ReadFile("../../docs/distributed.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "<!-- k8s-job-example -->\n```yaml\n")
	block, _, ok2 := strings.Cut(block, "```\n<!-- /k8s-job-example -->")
	if !ok || !ok2 {
		t.Fatal("docs/distributed.md has no k8s-job-example block")
	}
	if block != app.out.String() {
		t.Fatalf("docs/distributed.md's example manifest is not the command's output; regenerate it with\n  cd cmd/llmbench/testdata && llmbench %s\ngot:\n%s", strings.Join(k8sExampleArgs, " "), app.out.String())
	}
}

// TestK8sJobPodsRunValidCommands: the commands the manifest's pods run parse as llmbench
// commands (so a renamed flag cannot leave the manifest stale), and shard auto/N resolves
// from the index the Job sets.
func TestK8sJobPodsRunValidCommands(t *testing.T) {
	t.Run("configmap", func(t *testing.T) { checkK8sJobCommands(t, k8sExampleArgs) })
	byURL := append([]string{k8sExampleArgs[0], k8sExampleArgs[1], "--trace-url", "https://traces.example/k8s-example.jsonl"}, k8sExampleArgs[2:]...)
	t.Run("url", func(t *testing.T) { checkK8sJobCommands(t, byURL) })
	onVolume := append([]string{k8sExampleArgs[0], k8sExampleArgs[1], "--trace-volume", "traces:day1/k8s-example.jsonl"}, k8sExampleArgs[2:]...)
	t.Run("volume", func(t *testing.T) { checkK8sJobCommands(t, onVolume) })
}

func checkK8sJobCommands(t *testing.T, jobArgs []string) {
	app := newTestApp(nil)
	mustRun(t, app, jobArgs...)
	var jobs []*batchv1.Job
	for _, doc := range strings.Split(app.out.String(), "\n---\n") {
		if strings.Contains(doc, "\nkind: Job\n") {
			j := &batchv1.Job{}
			if err := yaml.UnmarshalStrict([]byte(doc), j); err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, j)
		}
	}
	if len(jobs) != 2 {
		t.Fatalf("%d jobs", len(jobs))
	}
	var commands [][]string
	for _, j := range jobs {
		for _, c := range j.Spec.Template.Spec.InitContainers {
			commands = append(commands, c.Args)
		}
		commands = append(commands, j.Spec.Template.Spec.Containers[0].Args)
	}
	sum, err := traces.FileSHA256("testdata/k8s-example.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range commands {
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", "2")
		}
		root := newRootCmd(&newTestApp(nil).App)
		cmd, rest, err := root.Find(args)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Fatalf("a pod runs `llmbench %s`: %v", strings.Join(args, " "), err)
		}
		digest := "trace-sha256"
		if cmd.Name() == "fetch" {
			digest = "sha256"
		}
		if got := cmd.Flag(digest).Value.String(); got != sum {
			t.Fatalf("`llmbench %s` checks the trace against %q, want %s", strings.Join(args, " "), got, sum)
		}
		if cmd.Name() == "run" {
			o := &usecase.ShardOptions{Shard: cmd.Flag("shard").Value.String(), StartAt: cmd.Flag("start-at").Value.String(), ClockRef: cmd.Flag("clock-ref").Value.String()}
			env := map[string]string{"JOB_COMPLETION_INDEX": "2"}
			so, err := o.Options(newTestApp(env).App.Getenv, cmd.Flag("trace").Value.String(), cmd.Flag("endpoint").Value.String())
			if err != nil || so.Shard.Index != 2 || so.Shard.Count != 3 || so.StartAt.IsZero() {
				t.Fatalf("shard flags %+v: %v", so, err)
			}
			if cmd.Flag("out").Value.String() != "/results/shard-2" {
				t.Fatalf("--out %s", cmd.Flag("out").Value)
			}
		}
	}
}
