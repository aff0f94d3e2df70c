package k8srun

import (
	"context"
	"fmt"
)

// stop ends what still runs when the run ends: the shards' Job suspended when suspend (the Job
// controller deletes its pods, which get SIGTERM and write what they have), and the clock
// Deployment scaled to zero. Every call together is bounded by o.StopTimeout, also when ctx
// has ended (an interrupt) and whatever the API server does. It returns a line for each thing
// stopped, or not stopped with the command that does it by hand.
func (c *Cluster) stop(ctx context.Context, o Options, suspend bool) []string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.StopTimeout)
	defer cancel()
	var lines []string
	ns := c.Namespace
	if suspend {
		job := o.Name + "-shards"
		if err := c.patchSuspend(ctx, job, true); err != nil {
			lines = append(lines, fmt.Sprintf("could not suspend Job %s (%v): its pods may still run; `kubectl -n %s patch job %s --type=merge -p '{\"spec\":{\"suspend\":true}}'` stops them",
				job, err, ns, job))
		} else {
			lines = append(lines, fmt.Sprintf("Job %s suspended: its pods get SIGTERM and write what they have", job))
		}
	}
	clock := o.Name + "-clock"
	if err := c.patchDeployment(ctx, clock, []byte(`{"spec":{"replicas":0}}`)); err != nil {
		lines = append(lines, fmt.Sprintf("could not scale Deployment %s to 0 (%v): `kubectl -n %s scale deployment %s --replicas=0` stops the clock",
			clock, err, ns, clock))
	} else {
		lines = append(lines, fmt.Sprintf("Deployment %s (the clock) scaled to 0", clock))
	}
	return lines
}
