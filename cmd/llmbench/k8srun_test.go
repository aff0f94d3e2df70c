package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/llmbench/llmbench/internal/k8stest"
	"github.com/llmbench/llmbench/runner"
)

// TestK8sRunOnARealControlPlane drives `llmbench k8s run` against a real kube-apiserver and
// the real Job controller (internal/k8stest); the test's node agent runs each pod's command
// in-process with the pod's environment, so the shards are real llmbench runs against a
// reference engine on loopback, and the merge is a real llmbench merge.
func TestK8sRunOnARealControlPlane(t *testing.T) {
	agent := k8stest.NewAgent(t)
	cp := k8stest.Start(t, agent.CA())
	endpoint, _ := engineLoopback(t)
	agent.Unpullable = func(image string) bool { return strings.Contains(image, "/missing") }
	agent.Run = func(ctx context.Context, c k8stest.Container) int {
		if len(c.Args) == 0 || c.Args[0] != "/llmbench" {
			fmt.Fprintf(c.Stdout, "not the llmbench image: %q\n", c.Args)
			return 127
		}
		args := c.Args[1:]
		if strings.HasPrefix(c.Pod, "partial-shards-") && c.Env["JOB_COMPLETION_INDEX"] == "1" && args[0] == "run" {
			fmt.Fprintln(c.Stdout, "llmbench: the test's shard 1 fails on purpose")
			return 1
		}
		for i, a := range args {
			// The cluster's DNS name of the clock Service: the engine serves the same clock.
			if strings.HasPrefix(a, "http://") && strings.HasSuffix(a, "-clock:9000") {
				args[i] = endpoint
			}
		}
		app := newTestApp(c.Env)
		app.Stdout, app.Stderr = c.Stdout, c.Stdout
		return execute(ctx, &app.App, args)
	}
	agent.Attach(t, cp.API)

	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.jsonl")
	var b strings.Builder
	const requests = 24
	for i := range requests {
		fmt.Fprintf(&b, `{"id":"r%d","arrival_s":%g,"input_tokens":%d,"output_tokens":%d}`+"\n", i, float64(i)*0.05, 20+i, 8+i%5)
	}
	if err := os.WriteFile(trace, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	app := newTestApp(nil)
	if code := app.cli("k8s", "run", "--kubeconfig", cp.Kubeconfig, "--trace", trace, "--shards", "3",
		"--image", "registry.example/llmbench:test", "--endpoint", endpoint, "--start-in", "8s",
		"--poll", "200ms", "--out", out, "--", "--slo", "ttft=2s"); code != 0 {
		t.Fatalf("k8s run: exit %d\nstdout:\n%s\nstderr:\n%s", code, app.out.String(), app.err.String())
	}
	t.Logf("k8s run's stderr:\n%s\nstdout:\n%s", app.err.String(), app.out.String())
	sum, err := runner.ReadSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests.Total != requests || sum.Run.Merged == nil || len(sum.Run.Merged.Merged) != 3 {
		t.Fatalf("merged summary: %d requests (want %d), merged %+v", sum.Requests.Total, requests, sum.Run.Merged)
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(agent.Claim("llmbench-results"), "merged", "requests.msgpack")); err != nil {
		t.Fatalf("the records are not on the results volume: %v", err)
	}
	for _, want := range []string{"shards: 0 waiting for a pod", "3 done, 0 failed", "resuming the merge"} {
		if !strings.Contains(app.err.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, app.err.String())
		}
	}
	checkShardPods(t, cp)

	del := newTestApp(nil)
	mustRun(t, del, "k8s", "delete", "llmbench", "--kubeconfig", cp.Kubeconfig)
	for _, want := range []string{"deleted Job llmbench-merge", "deleted Job llmbench-shards", "deleted ConfigMap llmbench-trace", "deleted PersistentVolumeClaim llmbench-results"} {
		if !strings.Contains(del.out.String(), want) {
			t.Errorf("k8s delete: %q lacks %q", del.out.String(), want)
		}
	}
	jobs, err := cp.API.Jobs(context.Background(), cp.Namespace)
	if err != nil || len(jobs) != 0 {
		t.Fatalf("jobs after delete: %d, %v", len(jobs), err)
	}

	t.Run("a shard fails", func(t *testing.T) { checkK8sRunFailedShard(t, cp, trace, endpoint) })
	t.Run("bad input", func(t *testing.T) { checkK8sRunBadInput(t, cp, trace, endpoint) })
}

// checkShardPods: one pod per index, each running its shard of the same run with the index
// the Job set.
func checkShardPods(t *testing.T, cp *k8stest.ControlPlane) {
	t.Helper()
	pods, err := cp.API.Pods(context.Background(), cp.Namespace, "app.kubernetes.io/component=shard")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range pods {
		idx := p.Annotations["batch.kubernetes.io/job-completion-index"]
		seen[idx] = true
		c := p.Spec.Containers[0]
		args := strings.Join(c.Args, " ")
		if p.Status.Phase != corev1.PodSucceeded || !strings.Contains(args, "--shard auto/3") || !strings.Contains(args, "--trace-sha256 ") ||
			!strings.Contains(args, "--out /results/shard-$(JOB_COMPLETION_INDEX)") || !strings.Contains(args, "--slo ttft=2s") {
			t.Errorf("pod %s (index %s): phase %s, args %q", p.Name, idx, p.Status.Phase, args)
		}
	}
	if len(pods) != 3 || !seen["0"] || !seen["1"] || !seen["2"] {
		t.Fatalf("%d shard pods, indexes %v", len(pods), seen)
	}
}

func checkK8sRunBadInput(t *testing.T, cp *k8stest.ControlPlane, trace, endpoint string) {
	base := []string{"k8s", "run", "--trace", trace, "--shards", "2", "--endpoint", endpoint, "--start-in", "5s", "--poll", "200ms"}
	noContext := filepath.Join(t.TempDir(), "kubeconfig")
	cfg, err := os.ReadFile(cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(noContext, []byte(strings.Replace(string(cfg), "current-context: test", "current-context: \"\"", 1)), 0o600)
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no current context", []string{"--kubeconfig", noContext, "--image", "registry.example/llmbench:test"}, exitBadInput, []string{"has no current context", "use-context"}},
		{"no namespace", []string{"--kubeconfig", cp.Kubeconfig, "--namespace", "nope", "--image", "registry.example/llmbench:test"}, exitBadInput, []string{`namespace "nope" does not exist`}},
		{"image not pulled", []string{"--kubeconfig", cp.Kubeconfig, "--name", "pull", "--image", "registry.example/missing:1", "--pull-timeout", "2s"}, exitRunFailed, []string{"ErrImagePull", "cannot be pulled", "llmbench k8s delete pull"}},
	} {
		app := newTestApp(nil)
		code := app.cli(append(base, c.args...)...)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, code, c.code, app.err.String())
		}
		for _, w := range c.want {
			if !strings.Contains(app.err.String(), w) {
				t.Errorf("%s: stderr lacks %q:\n%s", c.name, w, app.err.String())
			}
		}
	}
	if _, err := cp.API.Job(context.Background(), cp.Namespace, "pull-shards"); err != nil {
		t.Errorf("the objects of the failed run were not left for inspection: %v", err)
	}
}

// checkK8sRunFailedShard: a shard whose pod fails does not stop the others
// (backoffLimitPerIndex); the run names it with its reason and log tail, merges the shards
// that finished, and counts the failed shard's requests as dropped (never sent: not
// failures), as llmbench merge does.
func checkK8sRunFailedShard(t *testing.T, cp *k8stest.ControlPlane, trace, endpoint string) {
	app := newTestApp(nil)
	out := filepath.Join(t.TempDir(), "partial")
	code := app.cli("k8s", "run", "--kubeconfig", cp.Kubeconfig, "--name", "partial", "--trace", trace, "--shards", "3",
		"--image", "registry.example/llmbench:test", "--endpoint", endpoint, "--start-in", "8s", "--poll", "200ms", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitOK, app.out.String(), app.err.String())
	}
	for _, want := range []string{"shard 1 failed (pod partial-shards-", "Error (exit 1)", "the test's shard 1 fails on purpose", "2 done, 1 failed"} {
		if !strings.Contains(app.err.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, app.err.String())
		}
	}
	if !strings.Contains(app.out.String(), "merged 2 of 3 shards (missing [1]") {
		t.Errorf("stdout does not name the missing shard:\n%s", app.out.String())
	}
	sum, err := runner.ReadSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests.Total != 24 || sum.Run.Merged == nil || sum.Run.Merged.Dropped == 0 || sum.Run.Merged.Dropped >= 24 {
		t.Fatalf("merged summary: %d requests, merged %+v", sum.Requests.Total, sum.Run.Merged)
	}
}
