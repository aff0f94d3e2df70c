package k8srun

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/llmbench/llmbench/internal/safetext"
)

// watch is what followShards keeps between polls.
type watch struct {
	last     string               // the tally printed last
	reported map[int]bool         // failed shards reported
	waiting  map[string]time.Time // pods waiting for an image, since
	said     map[string]string    // an object's explanation printed last
	clockWhy string               // why the clock pod is not ready ("" when it is)
}

func newWatch() *watch {
	return &watch{reported: map[int]bool{}, waiting: map[string]time.Time{}, said: map[string]string{}}
}

// explain prints why shards that have not started are not running (their pods' scheduling
// condition or waiting reason, and the newest warning event about each pod or the Job), and
// the clock pod's, each once per change; it remembers them in w for the StartError. It reads
// the events only while a shard has not started.
func (c *Cluster) explain(ctx context.Context, o Options, w *watch, job *batchv1.Job, pods []corev1.Pod, states []ShardState) error {
	waiting := false
	for _, s := range states {
		waiting = waiting || !s.started()
	}
	if !waiting {
		return nil
	}
	clocks, err := c.pods(ctx, o.Name, "clock")
	if err != nil {
		return err
	}
	evs, err := c.listWarnings(ctx)
	if err != nil {
		return err
	}
	newest := newestWarnings(evs, job.CreationTimestamp.Add(-time.Second))
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	jobWhy := c.say(o, w, "Job "+job.Name, "", newest[job.Name]) // e.g. FailedCreate: a quota
	for i := range states {
		s := &states[i]
		switch {
		case s.started():
		case s.Pod == "":
			s.Why = jobWhy
		default:
			s.Why = c.say(o, w, fmt.Sprintf("shard %d (pod %s)", s.Index, s.Pod), pendingWhy(byName[s.Pod]), newest[s.Pod])
		}
	}
	w.clockWhy = ""
	for i := range clocks {
		if p := &clocks[i]; p.DeletionTimestamp == nil && !podReady(p) {
			w.clockWhy = "the clock (pod " + p.Name + ") is not ready"
			if why := c.say(o, w, "clock (pod "+p.Name+")", pendingWhy(p), newest[p.Name]); why != "" {
				w.clockWhy += ": " + why
			}
		}
	}
	rs := o.Name + "-clock-" // the clock Deployment's ReplicaSets: NAME-clock-HASH
	for k, ev := range newest {
		if strings.HasPrefix(k, rs) && !strings.Contains(k[len(rs):], "-") {
			c.say(o, w, "ReplicaSet "+k, "", ev)
		}
	}
	return nil
}

// say prints "WHO: WHY" (and the warning event) when it differs from what was printed for
// WHO last, and returns the explanation. Outside text is cut and escaped.
func (c *Cluster) say(o Options, w *watch, who, why string, ev *corev1.Event) string {
	var parts []string
	if why != "" {
		parts = append(parts, why)
	}
	if ev != nil {
		if msg := strings.TrimSpace(ev.Message); msg == "" || (why != "" && strings.Contains(why, msg)) {
			parts = append(parts, "warning "+ev.Reason) // the scheduler's event repeats its condition
		} else {
			parts = append(parts, "warning "+ev.Reason+": "+msg)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	text := safetext.Escape(strings.Join(parts, "; "), 400)
	if w.said[who] != text {
		w.said[who] = text
		fmt.Fprintf(o.Progress, "%s: %s\n", who, text)
	}
	return text
}

// pendingWhy says why a pod that has not started is not running: not scheduled (the
// PodScheduled condition's reason and message), or a container's waiting reason.
func pendingWhy(p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return strings.TrimSpace("not scheduled: " + c.Reason + ": " + c.Message)
		}
	}
	return podReason(p)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return p.Status.Phase == corev1.PodRunning
}

// newestWarnings is the newest warning event about each object (by name) since since.
func newestWarnings(evs []corev1.Event, since time.Time) map[string]*corev1.Event {
	out := map[string]*corev1.Event{}
	for i := range evs {
		e := &evs[i]
		t := eventTime(e)
		if t.Before(since) {
			continue // an earlier run's objects had the same names
		}
		if cur, ok := out[e.InvolvedObject.Name]; !ok || eventTime(cur).Before(t) {
			out[e.InvolvedObject.Name] = e
		}
	}
	return out
}

// eventTime is when an event last happened: its series' last time, its last timestamp, its
// event time or its creation, the first that is set.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// startFailed is a *StartError when the shards cannot start together: the Job failed through
// its pod failure policy (a shard's trace fetch failed, or a shard was late), or a shard pod
// is not running by the common start plus the grace.
func startFailed(o Options, w *watch, job *batchv1.Job, states []ShardState) error {
	for _, cond := range job.Status.Conditions {
		if cond.Type == batchv1.JobFailed && cond.Status == corev1.ConditionTrue && cond.Reason == batchv1.JobReasonPodFailurePolicy {
			return &StartError{Reason: fmt.Sprintf("the shards did not start together: Job %s failed: %s (a shard that cannot start stops them all)",
				job.Name, safetext.Escape(cond.Message, 400))}
		}
	}
	if o.StartAt.IsZero() || o.StartGrace <= 0 || !o.Now().After(o.StartAt.Add(o.StartGrace)) {
		return nil
	}
	var late []string
	for _, s := range states {
		if s.started() {
			continue
		}
		what := fmt.Sprintf("shard %d (pod %s)", s.Index, s.Pod)
		if s.Pod == "" {
			what = fmt.Sprintf("shard %d (no pod yet)", s.Index)
		}
		if s.Why != "" {
			what += ": " + s.Why
		}
		late = append(late, what)
	}
	if len(late) == 0 {
		return nil
	}
	n := len(late)
	if w.clockWhy != "" {
		late = append(late, w.clockWhy)
	}
	return &StartError{Reason: fmt.Sprintf("the shards did not start together: %d of %d not running by %s (the common start %s plus --start-grace %s): %s",
		n, len(states), o.StartAt.Add(o.StartGrace).UTC().Format(time.RFC3339), o.StartAt.UTC().Format(time.RFC3339), o.StartGrace, strings.Join(late, "; "))}
}
