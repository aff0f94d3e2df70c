package k8srun

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/llmbench/llmbench/k8sjob"
)

// FitError refuses a run before anything is created: no node can hold one shard pod, or the
// nodes cannot hold every shard pod and the clock at once, by their allocatable resources.
// The shards start together or not at all, so such a run could never start.
type FitError struct{ Reason string }

func (e *FitError) Error() string { return e.Reason }

// size is what a pod requests: CPU in millicores, memory in bytes (0: none requested).
type size struct{ cpu, mem int64 }

// room is a node that can run the run's pods: what it has allocatable, and what the pods
// already on it request. known is false when the node reports no allocatable CPU (a node
// still registering): it is then not limited.
type room struct {
	name        string
	alloc, used size
	pods, held  int64 // allocatable pods, and pods on it
	known       bool
}

// podSize is what a pod of spec requests, as the scheduler counts it: the larger of its
// containers' sum (with the restartable init containers, sidecars) and each init container
// with the sidecars started before it, plus the pod's overhead.
func podSize(spec *corev1.PodSpec) size {
	get := func(l corev1.ResourceList) size {
		return size{cpu: l.Cpu().MilliValue(), mem: l.Memory().Value()}
	}
	var sum, sidecars, initMax size
	for _, c := range spec.Containers {
		r := get(c.Resources.Requests)
		sum.cpu, sum.mem = sum.cpu+r.cpu, sum.mem+r.mem
	}
	for _, c := range spec.InitContainers {
		r := get(c.Resources.Requests)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars.cpu, sidecars.mem = sidecars.cpu+r.cpu, sidecars.mem+r.mem
			r = sidecars
		} else {
			r.cpu, r.mem = r.cpu+sidecars.cpu, r.mem+sidecars.mem
		}
		initMax.cpu, initMax.mem = max(initMax.cpu, r.cpu), max(initMax.mem, r.mem)
	}
	over := get(spec.Overhead)
	return size{cpu: max(sum.cpu+sidecars.cpu, initMax.cpu) + over.cpu, mem: max(sum.mem+sidecars.mem, initMax.mem) + over.mem}
}

// holds is how many pods of size s the free resources f hold, at most pods.
func holds(f size, pods int64, s size) int64 {
	n := pods
	if s.cpu > 0 {
		n = min(n, f.cpu/s.cpu)
	}
	if s.mem > 0 {
		n = min(n, f.mem/s.mem)
	}
	return max(n, 0)
}

// capacity is how many shard pods the nodes hold at once beside one clock pod, each node's
// free resources given by free: the clock goes where it costs the fewest shard pods.
func capacity(rooms []room, shard, clock size, free func(room) (size, int64)) int64 {
	const unlimited = int64(1) << 40
	var total, bestLoss int64 = 0, -1
	for _, r := range rooms {
		if !r.known {
			return unlimited
		}
		f, pods := free(r)
		n := holds(f, pods, shard)
		total += n
		if pods >= 1 && f.cpu >= clock.cpu && f.mem >= clock.mem {
			rest := size{f.cpu - clock.cpu, f.mem - clock.mem}
			if loss := n - holds(rest, pods-1, shard); bestLoss < 0 || loss < bestLoss {
				bestLoss = loss
			}
		}
	}
	if bestLoss < 0 {
		return 0 // the clock fits nowhere: without it no shard measures its offset
	}
	return total - bestLoss
}

// CheckFit reads the nodes' allocatable resources and refuses (a *FitError) a run whose shard
// pod fits no node, or whose shard pods and clock the nodes cannot hold at once. It then
// subtracts what the pods already on the nodes request, and when the room left cannot hold
// them all says so on w (the run then waits for room until the start plus the grace). A user
// who may not list nodes or pods gets a note on w instead of the check.
func (c *Cluster) CheckFit(ctx context.Context, m *k8sjob.Manifest, shards int, w io.Writer) error {
	list, err := c.listNodes(ctx)
	if apierrors.IsForbidden(err) {
		fmt.Fprintf(w, "k8s: may not list the nodes (%s): the check that a shard pod fits a node is skipped\n", apierrors.ReasonForError(err))
		return nil
	}
	if err != nil {
		return fmt.Errorf("list the nodes: %w", err)
	}
	shard, clock := podSize(&m.Shards.Spec.Template.Spec), podSize(&m.Clock.Spec.Template.Spec)
	rooms, excluded := usableNodes(list)
	if len(rooms) == 0 {
		if len(list) == 0 {
			return &FitError{Reason: "the cluster has no nodes to run the shard pods"}
		}
		return &FitError{Reason: "no node can run the shard pods: " + strings.Join(excluded, "; ")}
	}
	if err := fitsOne(rooms, shard, excluded); err != nil {
		return err
	}
	allocatable := func(r room) (size, int64) { return r.alloc, r.pods }
	if n := capacity(rooms, shard, clock, allocatable); n < int64(shards) {
		return &FitError{Reason: fmt.Sprintf("the nodes can hold %d of the %d shard pods (%s each) at once beside the clock (%s): %s; the shards start together or not at all: use fewer --shards or a smaller --cpu/--memory",
			n, shards, describe(shard), describe(clock), nodeList(rooms, shard, "allocatable", allocatable))}
	}
	c.noteRoom(ctx, rooms, shard, clock, shards, w)
	return nil
}

// noteRoom says on w when the pods already on the nodes leave room for fewer than shards
// shard pods now.
func (c *Cluster) noteRoom(ctx context.Context, rooms []room, shard, clock size, shards int, w io.Writer) {
	held, err := c.listBoundPods(ctx)
	if err != nil {
		fmt.Fprintf(w, "k8s: cannot list the pods on the nodes (%s): the room other pods take is not counted\n", apierrors.ReasonForError(err))
		return
	}
	byNode := map[string]int{}
	for i := range rooms {
		byNode[rooms[i].name] = i
	}
	for i := range held {
		if j, ok := byNode[held[i].Spec.NodeName]; ok {
			s := podSize(&held[i].Spec)
			rooms[j].used.cpu += s.cpu
			rooms[j].used.mem += s.mem
			rooms[j].held++
		}
	}
	free := func(r room) (size, int64) {
		return size{r.alloc.cpu - r.used.cpu, r.alloc.mem - r.used.mem}, r.pods - r.held
	}
	if n := capacity(rooms, shard, clock, free); n < int64(shards) {
		fmt.Fprintf(w, "k8s: the pods already on the nodes leave room for %d of the %d shard pods (%s each) beside the clock now: %s; the run waits for room until the start plus --start-grace, then ends (exit 3)\n",
			max(n, 0), shards, describe(shard), nodeList(rooms, shard, "free", free))
	}
}

// usableNodes are the nodes the run's pods may go to (Ready, not cordoned, without a taint
// that repels pods without tolerations), and a note for each node left out.
func usableNodes(list []corev1.Node) ([]room, []string) {
	var rooms []room
	var excluded []string
	for _, n := range list {
		if why := unusable(&n); why != "" {
			excluded = append(excluded, n.Name+": "+why)
			continue
		}
		a := n.Status.Allocatable
		r := room{name: n.Name, alloc: size{cpu: a.Cpu().MilliValue(), mem: a.Memory().Value()}, pods: 110}
		if q, ok := a[corev1.ResourcePods]; ok {
			r.pods = q.Value()
		}
		_, r.known = a[corev1.ResourceCPU]
		if _, ok := a[corev1.ResourceMemory]; !ok {
			r.alloc.mem = 1 << 62 // not reported: not a limit
		}
		rooms = append(rooms, r)
	}
	return rooms, excluded
}

func unusable(n *corev1.Node) string {
	if n.Spec.Unschedulable {
		return "cordoned"
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return "not Ready"
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			continue // on a Ready node, the node controller's taint is about to go
		}
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return fmt.Sprintf("taint %s:%s", t.Key, t.Effect)
		}
	}
	return ""
}

// fitsOne is a *FitError when no node's allocatable resources hold one shard pod.
func fitsOne(rooms []room, shard size, excluded []string) error {
	var big room
	for _, r := range rooms {
		if !r.known || holds(r.alloc, r.pods, shard) >= 1 {
			return nil
		}
		if r.alloc.cpu > big.alloc.cpu || (r.alloc.cpu == big.alloc.cpu && r.alloc.mem > big.alloc.mem) {
			big = r
		}
	}
	has := big.alloc
	if shard.mem == 0 {
		has.mem = 0 // memory is not what is short
	}
	why := fmt.Sprintf("each shard pod requests %s; the largest node, %s, has %s allocatable", describe(shard), big.name, describe(has))
	if len(excluded) > 0 {
		why += " (not counted: " + strings.Join(excluded, "; ") + ")"
	}
	return &FitError{Reason: why + ": give a smaller --cpu or --memory"}
}

// describe is a size as people read it: "2 CPU", "500m CPU and 1Gi memory".
func describe(s size) string {
	cpu := resource.NewMilliQuantity(s.cpu, resource.DecimalSI).String() + " CPU"
	if s.cpu%1000 != 0 && s.cpu > 1000 {
		cpu = fmt.Sprintf("%g CPU", float64(s.cpu)/1000)
	}
	if s.mem <= 0 {
		return cpu
	}
	return cpu + " and " + resource.NewQuantity(s.mem, resource.BinarySI).String() + " memory"
}

// nodeList names the nodes (the five with the most room) with their resources (what: free or
// allocatable, as free gives them) and how many shard pods each holds.
func nodeList(rooms []room, shard size, what string, free func(room) (size, int64)) string {
	sorted := append([]room{}, rooms...)
	sort.Slice(sorted, func(i, j int) bool {
		fi, _ := free(sorted[i])
		fj, _ := free(sorted[j])
		return fi.cpu > fj.cpu
	})
	var parts []string
	for i, r := range sorted {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(sorted)-5))
			break
		}
		f, pods := free(r)
		mem := f.mem
		if shard.mem == 0 {
			mem = 0
		}
		parts = append(parts, fmt.Sprintf("%s has %s %s, holds %d", r.name, describe(size{max(f.cpu, 0), max(mem, 0)}), what, holds(f, pods, shard)))
	}
	return strings.Join(parts, ", ")
}
