package k8srun

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func req(cpu, mem string) corev1.ResourceRequirements {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return corev1.ResourceRequirements{Requests: l}
}

// TestPodSize: a pod's request as the scheduler counts it: the larger of its containers' sum
// and each init container (with the sidecars started before it), plus the overhead.
func TestPodSize(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	for _, c := range []struct {
		name string
		spec corev1.PodSpec
		want size
	}{
		{"containers", corev1.PodSpec{Containers: []corev1.Container{{Resources: req("500m", "1Gi")}, {Resources: req("250m", "")}}}, size{750, 1 << 30}},
		{"a bigger init container", corev1.PodSpec{InitContainers: []corev1.Container{{Resources: req("1", "")}},
			Containers: []corev1.Container{{Resources: req("500m", "")}}}, size{1000, 0}},
		{"a sidecar", corev1.PodSpec{InitContainers: []corev1.Container{{Resources: req("100m", ""), RestartPolicy: &always}, {Resources: req("1", "")}},
			Containers: []corev1.Container{{Resources: req("500m", "")}}}, size{1100, 0}},
		{"overhead", corev1.PodSpec{Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")},
			Containers: []corev1.Container{{Resources: req("2", "")}}}, size{2050, 0}},
	} {
		if got := podSize(&c.spec); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func node(name, cpu, mem string, mods ...func(*corev1.Node)) corev1.Node {
	n := corev1.Node{}
	n.Name = name
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse("110")}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	for _, m := range mods {
		m(&n)
	}
	return n
}

// TestFitNumbers: the one-pod check names the shard's request and the largest node's
// allocatable; the all-at-once count places the clock where it costs fewest shards; nodes
// that cannot run the pods are left out, named; a node that reports no allocatable CPU does
// not limit.
func TestFitNumbers(t *testing.T) {
	shard, clock := size{cpu: 2000}, size{cpu: 100}
	rooms, excluded := usableNodes([]corev1.Node{node("a", "1900m", "8Gi"), node("b", "1500m", "8Gi"),
		node("c", "64", "256Gi", func(n *corev1.Node) { n.Spec.Unschedulable = true }),
		node("d", "64", "256Gi", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
		}),
		node("e", "64", "256Gi", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }),
		node("f", "1", "1Gi", func(n *corev1.Node) { // Ready: the node controller's taint is stale
			n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
		})})
	if len(rooms) != 3 || strings.Join(excluded, "; ") != "c: cordoned; d: taint node-role.kubernetes.io/control-plane:NoSchedule; e: not Ready" {
		t.Fatalf("rooms %+v excluded %q", rooms, excluded)
	}
	err := fitsOne(rooms, shard, excluded)
	if err == nil || !strings.Contains(err.Error(), "each shard pod requests 2 CPU; the largest node, a, has 1.9 CPU allocatable") || !strings.Contains(err.Error(), "c: cordoned") {
		t.Fatalf("fitsOne: %v", err)
	}
	if err := fitsOne(rooms, size{cpu: 500, mem: 16 << 30}, nil); err == nil || !strings.Contains(err.Error(), "500m CPU and 16Gi memory") || !strings.Contains(err.Error(), "1.9 CPU and 8Gi memory") {
		t.Fatalf("fitsOne memory: %v", err)
	}
	alloc := func(r room) (size, int64) { return r.alloc, r.pods }
	// A 2.05-CPU and a 2-CPU node hold one 2-CPU shard each, but the clock's 100m costs one.
	two, _ := usableNodes([]corev1.Node{node("x", "2050m", "8Gi"), node("y", "2", "8Gi")})
	if n := capacity(two, shard, clock, alloc); n != 1 {
		t.Errorf("capacity of 2.05 + 2 CPU for 2-CPU shards beside a 100m clock: %d, want 1", n)
	}
	if n := capacity(two, size{cpu: 500}, clock, alloc); n != 7 {
		t.Errorf("capacity for 500m shards: %d, want 7 (4 on each node, less one for the clock)", n)
	}
	var bare corev1.Node
	bare.Name = "registering"
	unknown, _ := usableNodes([]corev1.Node{bare})
	if err := fitsOne(unknown, shard, nil); err != nil || capacity(unknown, shard, clock, alloc) < 1000 {
		t.Errorf("a node without allocatable figures limits: %v", err)
	}
}
