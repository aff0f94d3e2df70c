package k8srun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/k8sjob"
)

// Options of a run on the cluster.
type Options struct {
	// Name is the run's name (k8sjob.Options.Name): every object's prefix.
	Name string
	// Shards is the number of shard pods.
	Shards int
	// Progress receives a line whenever the shards' states change, and each failed shard's
	// reason and log tail (nil: io.Discard).
	Progress io.Writer
	// Poll is how often the run asks the API (default 2 s).
	Poll time.Duration
	// PullTimeout bounds how long a pod may wait for its image (default 5 min): past it the run
	// ends with a PullError naming the pod and the reason.
	PullTimeout time.Duration
	// StartAt is the shards' common start and StartGrace how late past it a shard pod may be
	// running: a shard not running by then ends the run with a *StartError naming why (zero
	// StartAt or StartGrace: no deadline).
	StartAt    time.Time
	StartGrace time.Duration
	// StopTimeout bounds the calls that stop what runs when the run ends early (suspending
	// the shards' Job, scaling the clock to zero; default 5 s), whatever the API server does.
	StopTimeout time.Duration
	// Now is the wall clock (time.Now when nil).
	Now func() time.Time
}

// Result is what a finished run brings back.
type Result struct {
	// Summary is the merged summary.json, as the merge pod printed it.
	Summary []byte
	// Shards is each shard's final state, by index.
	Shards []ShardState
	// MergeLog is the merge pod's log without the summary line.
	MergeLog string
	// Stopped says, a line each, what was stopped when the run ended (the shards' Job
	// suspended, the clock scaled to zero) or could not be.
	Stopped []string
	// Merging says the merge Job was resumed (it runs to its end on its own).
	Merging bool
}

// ShardState is one shard pod's phase and, when it is not progressing, why.
type ShardState struct {
	Index  int
	Pod    string
	Phase  corev1.PodPhase // "" before the Job made its pod
	Reason string
	// Why is the latest explanation of a shard that is not running: its pod's scheduling
	// condition or waiting reason, or the newest warning event about it.
	Why string
	// failed is the container whose log tells why the shard failed.
	failed string
}

// started says whether the shard's pod has started (or already ended).
func (s ShardState) started() bool {
	return s.Phase == corev1.PodRunning || s.Phase == corev1.PodSucceeded || s.Phase == corev1.PodFailed
}

// PullError ends a run whose pod could not get its image within PullTimeout.
type PullError struct{ Pod, Reason string }

func (e *PullError) Error() string {
	return fmt.Sprintf("pod %s cannot start: %s (the image cannot be pulled; check --image and the cluster's pull secrets)", e.Pod, safetext.Escape(e.Reason, 300))
}

// StartError ends a run whose shards could not start together: a shard pod not running by
// the common start plus the grace, a shard that could not start (its trace fetch failed, or it
// was late: the Job's pod failure policy failed the Job), or no shard finished. The shards'
// Job is suspended and the clock scaled to zero.
type StartError struct{ Reason string }

func (e *StartError) Error() string { return e.Reason }

// ErrInterrupted ends a run whose context was cancelled: the shards were asked to stop
// (their Job suspended, so each pod gets SIGTERM and writes what it has) and every object is
// left for inspection.
var ErrInterrupted = errors.New("interrupted: the shards were asked to stop; the objects are left for inspection")

// Run creates the manifest's objects, follows the shards until their Job has finished,
// resumes the merge Job, waits for it and returns the merged summary. A merge of fewer
// shards than planned (a shard that failed) still returns its summary: merge names the
// missing shards. On ctx's end the shards are suspended and ErrInterrupted returned.
func (c *Cluster) Run(ctx context.Context, m *k8sjob.Manifest, o Options) (*Result, error) {
	o.defaults()
	if err := c.apply(ctx, m, o.Name, o.StopTimeout); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w before the run's objects were created (%v)", ErrInterrupted, err)
		}
		return nil, err
	}
	states, done, err := c.followShards(ctx, o)
	if err != nil {
		return &Result{Shards: states, Stopped: c.stop(ctx, o, !done)}, err
	}
	stopped := c.stop(ctx, o, false) // the clock is not needed any more
	fmt.Fprintf(o.Progress, "shards finished: %s\n", tally(states))
	if !anySucceeded(states) {
		return &Result{Shards: states, Stopped: stopped}, &StartError{Reason: "no shard finished (each one's reason is above): nothing to merge"}
	}
	fmt.Fprintln(o.Progress, "resuming the merge")
	if err := c.resume(ctx, o.Name+"-merge"); err != nil {
		return &Result{Shards: states, Stopped: stopped}, c.pollErr(ctx, err)
	}
	res, err := c.waitMerge(ctx, o)
	if res == nil {
		res = &Result{}
	}
	res.Shards, res.Stopped, res.Merging = states, stopped, true
	return res, err
}

func anySucceeded(states []ShardState) bool {
	for _, s := range states {
		if s.Phase == corev1.PodSucceeded {
			return true
		}
	}
	return false
}

func (o *Options) defaults() {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.PullTimeout <= 0 {
		o.PullTimeout = 5 * time.Minute
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// followShards polls the shards' Job and pods until the Job has a Complete or Failed
// condition, printing each change of the tally, why a shard is not running, and each failed
// shard once. done says whether the Job finished (nothing of it runs any more).
func (c *Cluster) followShards(ctx context.Context, o Options) (states []ShardState, done bool, err error) {
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	w := newWatch()
	for {
		job, err := c.job(ctx, o.Name+"-shards")
		if err != nil {
			return states, false, c.pollErr(ctx, err)
		}
		pods, err := c.pods(ctx, o.Name, "shard")
		if err != nil {
			return states, false, c.pollErr(ctx, err)
		}
		states = shardStates(pods, o.Shards)
		if t := tally(states); t != w.last {
			fmt.Fprintf(o.Progress, "shards: %s\n", t)
			w.last = t
		}
		c.reportFailures(ctx, states, w.reported, o.Progress)
		if err := c.explain(ctx, o, w, job, pods, states); err != nil {
			return states, false, c.pollErr(ctx, err)
		}
		if err := pullStuck(pods, w.waiting, o.Now(), o.PullTimeout); err != nil {
			return states, false, err
		}
		if err := startFailed(o, w, job, states); err != nil {
			return states, finished(job), err
		}
		if finished(job) {
			return states, true, nil
		}
		select {
		case <-ctx.Done():
			return states, false, ErrInterrupted
		case <-tick.C:
		}
	}
}

// pollErr is ErrInterrupted when ctx ended, else err.
func (c *Cluster) pollErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	return fmt.Errorf("namespace %s: %w", c.Namespace, err)
}

func (c *Cluster) pods(ctx context.Context, run, component string) ([]corev1.Pod, error) {
	sel := "app.kubernetes.io/instance=" + run + ",app.kubernetes.io/component=" + component
	return c.listPods(ctx, sel)
}

// shardStates is each index's newest pod's state.
func shardStates(pods []corev1.Pod, n int) []ShardState {
	states := make([]ShardState, n)
	newest := make([]time.Time, n)
	for i := range states {
		states[i].Index = i
	}
	for _, p := range pods {
		i, err := strconv.Atoi(p.Annotations[batchv1.JobCompletionIndexAnnotation])
		if err != nil || i < 0 || i >= n || p.CreationTimestamp.Time.Before(newest[i]) {
			continue
		}
		newest[i] = p.CreationTimestamp.Time
		states[i] = ShardState{Index: i, Pod: p.Name, Phase: p.Status.Phase, Reason: podReason(&p), failed: failedContainer(&p)}
	}
	return states
}

// podReason says why a pod is not running or why it ended: a waiting or terminated
// container's reason, exit code and message, else the pod's.
func podReason(p *corev1.Pod) string {
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			return strings.TrimSpace(w.Reason + ": " + w.Message)
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return strings.TrimSpace(fmt.Sprintf("%s (exit %d) %s", t.Reason, t.ExitCode, t.Message))
		}
	}
	if p.Status.Reason != "" {
		return strings.TrimSpace(p.Status.Reason + ": " + p.Status.Message)
	}
	return ""
}

// Tally counts the shards by state: "1 waiting for a pod, 2 pending, 1 running, 0 done, 0 failed".
func Tally(states []ShardState) string { return tally(states) }

func tally(states []ShardState) string {
	var waiting, pending, running, done, failed int
	for _, s := range states {
		switch s.Phase {
		case "":
			waiting++
		case corev1.PodPending:
			pending++
		case corev1.PodRunning:
			running++
		case corev1.PodSucceeded:
			done++
		default:
			failed++
		}
	}
	return fmt.Sprintf("%d waiting for a pod, %d pending, %d running, %d done, %d failed", waiting, pending, running, done, failed)
}

// reportFailures prints each newly failed shard's reason and the tail of the failed
// container's log (the trace fetch's, when that failed).
func (c *Cluster) reportFailures(ctx context.Context, states []ShardState, reported map[int]bool, w io.Writer) {
	for _, s := range states {
		if s.Phase != corev1.PodFailed || reported[s.Index] {
			continue
		}
		reported[s.Index] = true
		fmt.Fprintf(w, "shard %d failed (pod %s): %s\n", s.Index, s.Pod, safetext.Quote(s.Reason, 300))
		if tail := c.logTail(ctx, s.Pod, s.failed, 10); tail != "" {
			fmt.Fprintf(w, "  last lines of its %s log:\n%s", s.failed, indent(tail))
		}
	}
}

// failedContainer is the first container of p (init containers first) that ended with a
// non-zero exit, else the shard's llmbench container.
func failedContainer(p *corev1.Pod) string {
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return cs.Name
		}
	}
	return k8sjob.ShardContainer
}

func (c *Cluster) logTail(ctx context.Context, pod, container string, lines int) string {
	b, err := c.podLog(ctx, pod, container, lines)
	if err != nil {
		return ""
	}
	return safeLines(string(b), int(lines))
}

// safeLines is the last n lines of a log from the cluster, each cut to 300 bytes with its
// control characters escaped: a pod's output is outside text.
func safeLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	for i, l := range lines {
		lines[i] = safetext.Escape(l, 300)
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// pullReasons are the waiting reasons of a container whose image cannot be had.
var pullReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true}

// pullStuck is a PullError once a pod has waited for its image longer than limit.
func pullStuck(pods []corev1.Pod, since map[string]time.Time, now time.Time, limit time.Duration) error {
	for _, p := range pods {
		for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			w := cs.State.Waiting
			if w == nil || !pullReasons[w.Reason] {
				continue
			}
			t, ok := since[p.Name]
			if !ok {
				since[p.Name] = now
				continue
			}
			if now.Sub(t) >= limit {
				return &PullError{Pod: p.Name, Reason: strings.TrimSpace(w.Reason + ": " + w.Message)}
			}
		}
	}
	return nil
}

func finished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func (c *Cluster) patchSuspend(ctx context.Context, job string, suspend bool) error {
	patch := fmt.Appendf(nil, `{"spec":{"suspend":%t}}`, suspend)
	return c.patchJob(ctx, job, patch)
}

func (c *Cluster) resume(ctx context.Context, job string) error {
	if err := c.patchSuspend(ctx, job, false); err != nil {
		return fmt.Errorf("resume Job %s: %w", job, err)
	}
	return nil
}

// waitMerge waits for the merge Job to finish and reads the summary from its pod's log.
func (c *Cluster) waitMerge(ctx context.Context, o Options) (*Result, error) {
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	waiting := map[string]time.Time{}
	for {
		job, err := c.job(ctx, o.Name+"-merge")
		if err != nil {
			return nil, c.pollErr(ctx, err)
		}
		pods, err := c.pods(ctx, o.Name, "merge")
		if err != nil {
			return nil, c.pollErr(ctx, err)
		}
		if err := pullStuck(pods, waiting, o.Now(), o.PullTimeout); err != nil {
			return nil, err
		}
		if finished(job) {
			return c.mergeResult(ctx, pods, job.Status.Succeeded > 0)
		}
		select {
		case <-ctx.Done():
			return nil, ErrInterrupted
		case <-tick.C:
		}
	}
}

func (c *Cluster) mergeResult(ctx context.Context, pods []corev1.Pod, ok bool) (*Result, error) {
	if len(pods) == 0 {
		return nil, errors.New("the merge Job finished without a pod")
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp) })
	pod := pods[len(pods)-1]
	log, err := c.podLog(ctx, pod.Name, "merge", 0)
	if err != nil {
		return nil, fmt.Errorf("read the log of merge pod %s: %w", pod.Name, err)
	}
	if !ok {
		return &Result{MergeLog: string(log)}, fmt.Errorf("the merge failed (pod %s: %s); its log ends:\n%s", pod.Name, podReason(&pod), indent(safeLines(string(log), 10)))
	}
	sum, rest := splitSummary(log)
	if sum == nil {
		return &Result{MergeLog: rest}, fmt.Errorf("merge pod %s's log has no %q line", pod.Name, strings.TrimSpace(k8sjob.SummaryPrefix))
	}
	return &Result{Summary: sum, MergeLog: rest}, nil
}

// splitSummary takes the last summary line out of a merge log.
func splitSummary(log []byte) (summary []byte, rest string) {
	var keep strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		if s, ok := strings.CutPrefix(line, k8sjob.SummaryPrefix); ok && json.Valid([]byte(s)) {
			summary = []byte(s)
			continue
		}
		keep.WriteString(line + "\n")
	}
	return summary, keep.String()
}
