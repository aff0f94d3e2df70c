package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/llmbench/llmbench/internal/k8stest"
)

// k8sTrace writes a small trace for the k8s run tests.
func k8sTrace(t *testing.T) string {
	t.Helper()
	trace, _ := writeTrace(t, t.TempDir(), "trace.jsonl", traceSpec{prefix: "k", n: 12, spacing: 20 * time.Millisecond, in: 16, out: 4})
	return trace
}

// checkLeftStopped: after a run that ended early, the shards' Job is suspended (or finished)
// and the clock scaled to zero: nothing of the run still runs.
func checkLeftStopped(t *testing.T, cp *k8stest.ControlPlane, name string) {
	t.Helper()
	ctx := context.Background()
	job, err := cp.API.Job(ctx, cp.Namespace, name+"-shards")
	if err != nil {
		t.Fatal(err)
	}
	if job.Spec.Suspend == nil || !*job.Spec.Suspend {
		finished := false
		for _, c := range job.Status.Conditions {
			finished = finished || (c.Type == "Failed" || c.Type == "Complete") && c.Status == corev1.ConditionTrue
		}
		if !finished {
			t.Errorf("Job %s-shards neither suspended nor finished: %+v", name, job.Status)
		}
	}
	d, err := cp.API.Deployment(ctx, cp.Namespace, name+"-clock")
	if err != nil || d.Spec.Replicas == nil || *d.Spec.Replicas != 0 {
		t.Errorf("the clock Deployment is not scaled to 0: %+v, %v", d.Spec.Replicas, err)
	}
}

// deleteRun removes a run's objects (k8s delete).
func deleteRun(t *testing.T, cp *k8stest.ControlPlane, name string) {
	t.Helper()
	mustRun(t, newTestApp(nil), "k8s", "delete", name, "--kubeconfig", cp.Kubeconfig)
}

// TestK8sRunWhyShardsDoNotStart: what the stand-in agent cannot show, shown through the API by
// k8stest.Fault and extra nodes: a node that can never hold a shard pod is refused before
// anything is created (exit 2, with the numbers); a shard pod the scheduler leaves
// Unschedulable, and one whose sandbox cannot be created, are named with the condition's or
// the warning event's reason and end the run at the common start plus --start-grace (exit 3),
// the shards' Job suspended and the clock scaled to zero.
func TestK8sRunWhyShardsDoNotStart(t *testing.T) {
	cp := k8stest.Start(t, k8stest.NewAgent(t).CA()) // no agent attached: nothing binds pods but Fault
	cp.API.AddNode(t, "small", "1900m", "8Gi")
	cp.API.AddPod(t, cp.Namespace, "other-workload", "small", "1500m")
	trace := k8sTrace(t)
	base := []string{"k8s", "run", "--kubeconfig", cp.Kubeconfig, "--trace", trace, "--image", "registry.example/llmbench:test",
		"--endpoint", "http://vllm.example:8000", "--poll", "200ms"}

	t.Run("never fits", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--name", "big", "--cpu", "2", "--shards", "2"}, "each shard pod requests 2 CPU; the largest node, small, has 1.9 CPU allocatable"},
			{[]string{"--name", "many", "--cpu", "1", "--shards", "2"}, "the nodes can hold 1 of the 2 shard pods (1 CPU each) at once beside the clock (100m CPU)"},
			{[]string{"--name", "mem", "--cpu", "500m", "--memory", "16Gi", "--shards", "2"}, "requests 500m CPU and 16Gi memory"},
		} {
			app := newTestApp(nil)
			code := app.cli(append(append(base, c.args...), "--start-in", "1m")...)
			if code != exitBadInput || !strings.Contains(app.err.String(), c.want) || !strings.Contains(app.err.String(), "nothing was created") {
				t.Errorf("%v: exit %d, want 2 and %q", c.args, code, c.want)
			}
			t.Logf("%v: exit %d: %s", c.args, code, app.err.String())
		}
		if jobs, err := cp.API.Jobs(context.Background(), cp.Namespace); err != nil || len(jobs) != 0 {
			t.Fatalf("a refused run created %d Jobs (%v)", len(jobs), err)
		}
	})

	t.Run("unschedulable", func(t *testing.T) {
		msg := "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found."
		(&k8stest.Fault{Unschedulable: true, Message: msg}).Attach(t, cp.API)
		app := newTestApp(nil)
		code := app.cli(append(base, "--name", "unsched", "--cpu", "500m", "--shards", "2", "--start-in", "3s", "--start-grace", "2s")...)
		for _, want := range []string{"the pods already on the nodes leave room for 0 of the 2 shard pods", "not scheduled: Unschedulable: " + msg,
			"warning FailedScheduling", "the shards did not start together: 2 of 2 not running by", "--start-grace 2s", "llmbench k8s delete unsched"} {
			if !strings.Contains(app.err.String(), want) {
				t.Errorf("stderr lacks %q", want)
			}
		}
		if code != exitRunFailed {
			t.Errorf("exit %d, want 3", code)
		}
		t.Logf("stderr:\n%s", app.err.String())
		checkLeftStopped(t, cp, "unsched")
		deleteRun(t, cp, "unsched")
	})

	t.Run("sandbox fails", func(t *testing.T) {
		msg := "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to create containerd task: runc create failed: unable to start container process: can't get final child's PID from pipe: EOF\x1b[2J"
		(&k8stest.Fault{Node: "small", Message: msg}).Attach(t, cp.API)
		app := newTestApp(nil)
		code := app.cli(append(base, "--name", "sandbox", "--cpu", "100m", "--shards", "2", "--start-in", "3s", "--start-grace", "2s")...)
		if code != exitRunFailed || !strings.Contains(app.err.String(), "warning FailedCreatePodSandbox: Failed to create pod sandbox") ||
			!strings.Contains(app.err.String(), "not running by") || strings.Contains(app.err.String(), "\x1b") {
			t.Errorf("exit %d, want 3 naming FailedCreatePodSandbox, escaped", code)
		}
		t.Logf("stderr:\n%s", app.err.String())
		checkLeftStopped(t, cp, "sandbox")
		deleteRun(t, cp, "sandbox")
	})
}

// switchProxy forwards to the API server until it is silenced; then it never answers.
type switchProxy struct {
	silent atomic.Bool
	rp     *httputil.ReverseProxy
}

func (p *switchProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.silent.Load() {
		// Read the body first: only then does the server notice the client hang up.
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
		return
	}
	p.rp.ServeHTTP(w, r)
}

// proxyKubeconfig is a kubeconfig like cp's that goes through a switchProxy.
func proxyKubeconfig(t *testing.T, cp *k8stest.ControlPlane) (string, *switchProxy) {
	t.Helper()
	target, err := url.Parse(cp.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{rp: httputil.NewSingleHostReverseProxy(target)}
	p.rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	srv := httptest.NewTLSServer(p)
	t.Cleanup(srv.Close)
	b, err := os.ReadFile(cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), fmt.Sprintf("%q", cp.URL), fmt.Sprintf("%q", srv.URL), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, p
}

// waitShardsRunning polls the API until n shard pods of run name are Running.
func waitShardsRunning(t *testing.T, cp *k8stest.ControlPlane, name string, n int) {
	t.Helper()
	waitFor(t, 2*time.Minute, fmt.Sprintf("%d running shard pods of %s", n, name), func() bool {
		pods, err := cp.API.Pods(context.Background(), cp.Namespace, "app.kubernetes.io/instance="+name+",app.kubernetes.io/component=shard")
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return err == nil && running == n
	})
}

// TestK8sRunEndsCleanly, on a control plane with the stand-in node agent: a trace URL that
// answers 404, or another file than --trace's, fails the fetch init container, and the Job's
// pod failure policy ends the run at once (exit 3, the reason and the fetch's log); so does a
// shard that is ready too late (its clock reference never answers) and exits 4; SIGTERM to
// the real binary mid-run suspends the shards, scales the clock to zero and says what to do
// next (exit 130); against an API server that goes silent mid-run the first SIGINT still ends
// it within 10 s, and a second one at once.
func TestK8sRunEndsCleanly(t *testing.T) {
	agent := k8stest.NewAgent(t)
	cp := k8stest.Start(t, agent.CA())
	endpoint, _ := engineLoopback(t)
	agent.Run = func(ctx context.Context, c k8stest.Container) int {
		app := newTestApp(c.Env)
		app.Stdout, app.Stderr = c.Stdout, c.Stdout
		return execute(ctx, &app.App, c.Args[1:])
	}
	agent.Attach(t, cp.API)
	trace := k8sTrace(t)
	body, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/other.jsonl" {
			w.Write(append([]byte(`{"id":"x","arrival_s":0,"input_tokens":1,"output_tokens":1}`+"\n"), body...))
			return
		}
		http.NotFound(w, r)
	}))
	defer files.Close()
	base := []string{"k8s", "run", "--kubeconfig", cp.Kubeconfig, "--trace", trace, "--image", "registry.example/llmbench:test",
		"--endpoint", endpoint, "--poll", "200ms", "--shards", "2", "--cpu", "500m"}

	for _, c := range []struct{ name, url, want string }{
		{"url404", files.URL + "/missing.jsonl", "404"},
		{"wrongsha", files.URL + "/other.jsonl", "sha256"},
	} {
		t.Run(c.name, func(t *testing.T) {
			app := newTestApp(nil)
			code := app.cli(append(base, "--name", c.name, "--trace-url", c.url, "--start-in", "2m")...)
			for _, want := range []string{"Job " + c.name + "-shards failed: Container fetch-trace", "last lines of its fetch-trace log", c.want} {
				if !strings.Contains(app.err.String(), want) {
					t.Errorf("stderr lacks %q", want)
				}
			}
			if code != exitRunFailed {
				t.Errorf("exit %d, want 3", code)
			}
			t.Logf("stderr:\n%s", app.err.String())
			checkLeftStopped(t, cp, c.name)
			deleteRun(t, cp, c.name)
		})
	}

	// The shards' clock reference (the clock Service) does not answer here: each shard waits
	// for it until the start plus the grace, then does not start (exit 4), and the pod failure
	// policy fails the Job.
	t.Run("late", func(t *testing.T) {
		app := newTestApp(nil)
		code := app.cli(append(base, "--name", "late", "--start-in", "4s", "--start-grace", "2s")...)
		for _, want := range []string{"Job late-shards failed: Container llmbench for pod", "exit code 4", "did not start: it was ready", "the clock reference did not answer"} {
			if !strings.Contains(app.err.String(), want) {
				t.Errorf("stderr lacks %q", want)
			}
		}
		if code != exitRunFailed {
			t.Errorf("exit %d, want 3", code)
		}
		t.Logf("stderr:\n%s", app.err.String())
		checkLeftStopped(t, cp, "late")
		deleteRun(t, cp, "late")
	})

	bin := llmbenchBinary(t)
	t.Run("SIGTERM suspends", func(t *testing.T) {
		run := startBinary(t, bin, append(append([]string{}, base...), "--name", "term", "--start-in", "2m")...)
		run.waitOutput(t, "0 pending, 2 running", 2*time.Minute) // as k8s run saw them
		sent := time.Now()
		run.cmd.Process.Signal(syscall.SIGTERM)
		code, took := run.waitExit(t, 10*time.Second, sent)
		out := run.out.String()
		for _, want := range []string{"interrupt: stopping the run", "Job term-shards suspended", "Deployment term-clock (the clock) scaled to 0",
			"shards: 0 waiting for a pod, 0 pending, 2 running", "patch job term-merge", "llmbench k8s delete term --namespace bench"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q", want)
			}
		}
		if code != exitInterrupted || t.Failed() {
			t.Fatalf("exit %d, want 130; output:\n%s", code, out)
		}
		t.Logf("SIGTERM mid-run: exit %d %s after the signal; output:\n%s", code, took.Round(time.Millisecond), out)
		checkLeftStopped(t, cp, "term")
		deleteRun(t, cp, "term")
	})

	for _, twice := range []bool{false, true} {
		name := map[bool]string{false: "silent", true: "silent2"}[twice]
		t.Run(name, func(t *testing.T) {
			kubeconfig, proxy := proxyKubeconfig(t, cp)
			args := append([]string{"k8s", "run", "--kubeconfig", kubeconfig}, base[4:]...)
			run := startBinary(t, bin, append(args, "--name", name, "--start-in", "2m")...)
			waitShardsRunning(t, cp, name, 2)
			proxy.silent.Store(true)
			sent := time.Now()
			run.cmd.Process.Signal(syscall.SIGINT)
			if twice {
				run.waitOutput(t, "interrupt: stopping the run", 10*time.Second)
				run.cmd.Process.Signal(syscall.SIGINT)
			}
			code, took := run.waitExit(t, 10*time.Second, sent)
			want := "could not suspend Job " + name + "-shards"
			if twice {
				want = "interrupt: exiting now"
			}
			if code != exitInterrupted || !strings.Contains(run.out.String(), want) {
				t.Fatalf("exit %d after %s, want 130 and %q; output:\n%s", code, took, want, run.out.String())
			}
			t.Logf("SIGINT%s against an API server silent mid-run: exit %d %s after the first signal; output:\n%s", map[bool]string{true: " twice"}[twice], code, took.Round(time.Millisecond), run.out.String())
			proxy.silent.Store(false)
			deleteRun(t, cp, name)
		})
	}
}
