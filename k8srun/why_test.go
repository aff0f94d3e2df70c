package k8srun

import (
	"bytes"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPendingWhyAndWarnings: a pod that is not running is explained by its PodScheduled
// condition, else its waiting container; the newest warning event per object counts, an
// earlier run's are ignored; outside text is cut and escaped, and a repeated explanation is
// printed once.
func TestPendingWhyAndWarnings(t *testing.T) {
	p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient cpu."}}}}
	if got := pendingWhy(p); got != "not scheduled: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu." {
		t.Errorf("pendingWhy = %q", got)
	}
	p.Status.Conditions = nil
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: "image not present"}}}}
	if got := pendingWhy(p); got != "ErrImageNeverPull: image not present" {
		t.Errorf("pendingWhy = %q", got)
	}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ev := func(obj, reason, msg string, at time.Time) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Name: obj}, Reason: reason, Message: msg, LastTimestamp: metav1.NewTime(at)}
	}
	newest := newestWarnings([]corev1.Event{
		ev("pod-a", "FailedCreatePodSandbox", "old run", t0.Add(-time.Hour)),
		ev("pod-a", "FailedScheduling", "first", t0.Add(time.Second)),
		ev("pod-a", "FailedCreatePodSandbox", "runc create failed: \x1b[31mEOF", t0.Add(2*time.Second)),
	}, t0)
	if e := newest["pod-a"]; e == nil || e.Reason != "FailedCreatePodSandbox" {
		t.Fatalf("newest %+v", newest)
	}
	var out bytes.Buffer
	w := newWatch()
	o := Options{Progress: &out}
	c := &Cluster{}
	why := c.say(o, w, "shard 1 (pod pod-a)", "", newest["pod-a"])
	c.say(o, w, "shard 1 (pod pod-a)", "", newest["pod-a"])
	if strings.Contains(out.String(), "\x1b") || strings.Count(out.String(), "\n") != 1 ||
		!strings.Contains(out.String(), `shard 1 (pod pod-a): warning FailedCreatePodSandbox: runc create failed: \x1b[31mEOF`) || !strings.Contains(why, "FailedCreatePodSandbox") {
		t.Fatalf("progress %q, why %q", out.String(), why)
	}
}

// TestStartFailed: past the common start plus the grace, a shard that has not started ends the
// run naming it and why (and the clock when it is not ready); before it, nothing; a Job that
// its pod failure policy failed ends it at once with the Job's message.
func TestStartFailed(t *testing.T) {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := start.Add(5 * time.Second)
	o := Options{StartAt: start, StartGrace: 10 * time.Second, Now: func() time.Time { return now }}
	states := []ShardState{{Index: 0, Pod: "p0", Phase: corev1.PodRunning}, {Index: 1, Pod: "p1", Phase: corev1.PodPending, Why: "not scheduled: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu."},
		{Index: 2}}
	w := newWatch()
	w.clockWhy = "the clock (pod c) is not ready: not scheduled: Unschedulable"
	job := &batchv1.Job{}
	job.Name = "llmbench-shards"
	if err := startFailed(o, w, job, states); err != nil {
		t.Fatalf("before the deadline: %v", err)
	}
	now = start.Add(11 * time.Second)
	err := startFailed(o, w, job, states)
	for _, want := range []string{"2 of 3 not running by 2026-01-01T12:00:10Z", "--start-grace 10s", "shard 1 (pod p1): not scheduled: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu.",
		"shard 2 (no pod yet)", "the clock (pod c) is not ready"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("after the deadline: %v; want %q", err, want)
		}
	}
	now = start
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonPodFailurePolicy,
		Message: "Container fetch-trace for pod bench/llmbench-shards-1-x failed with exit code 1 matching FailJob rule at index 1"}}
	if err := startFailed(o, w, job, states); err == nil || !strings.Contains(err.Error(), "Job llmbench-shards failed: Container fetch-trace") {
		t.Errorf("pod failure policy: %v", err)
	}
}
