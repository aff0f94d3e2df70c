package k8stest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var eventsR = schema.GroupVersionResource{Version: "v1", Resource: "events"}

// AddNode registers a Ready node that no agent serves, with the given allocatable CPU and
// memory ("" leaves it out), for tests of what llmbench reads from the nodes.
func (a API) AddNode(t testing.TB, name, cpu, memory string) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := a.create(ctx, nodesR, "", node); err != nil {
		t.Fatal(err)
	}
	if err := a.get(ctx, nodesR, "", name, node); err != nil {
		t.Fatal(err)
	}
	alloc := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}
	if cpu != "" {
		alloc[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		alloc[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	node.Status = corev1.NodeStatus{Allocatable: alloc, Capacity: alloc,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}}
	if err := a.updateStatus(ctx, nodesR, "", node); err != nil {
		t.Fatal(err)
	}
}

// AddPod creates a pod bound to node that requests cpu, and is never run: the room other
// workloads take on a node.
func (a API) AddPod(t testing.TB, ns, name, node, cpu string) {
	t.Helper()
	q := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busy", Resources: corev1.ResourceRequirements{Requests: q, Limits: q}}}}}
	if err := a.create(context.Background(), podsR, ns, p); err != nil {
		t.Fatal(err)
	}
}

// Fault stands in for the kube-scheduler and a node that cannot start pods, to show how a pod
// that does not start looks through the API: with Unschedulable, every unbound pod is left
// unbound with a PodScheduled=False condition (reason Unschedulable) and a FailedScheduling
// warning event; with SandboxFails, every unbound pod is bound to Node and left Pending with
// FailedCreatePodSandbox warning events, as a kubelet whose runtime cannot create the pod's
// sandbox reports it. Message is the condition's and the events' message. No agent may be
// attached to the same control plane (it binds every pod).
type Fault struct {
	Unschedulable bool
	Node          string
	Message       string
}

// Attach runs the stand-in until the test ends, looking at the pods ten times a second.
func (f *Fault) Attach(t testing.TB, api API) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			if list, err := api.Pods(ctx, "", ""); err == nil {
				for i := range list {
					f.sync(ctx, api, &list[i])
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-stopped })
}

func (f *Fault) sync(ctx context.Context, api API, p *corev1.Pod) {
	switch {
	case p.DeletionTimestamp != nil:
		api.deletePod(ctx, p.Namespace, p.Name)
	case f.Unschedulable && p.Spec.NodeName == "":
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				return // reported
			}
		}
		cur := *p
		cur.Status.Phase = corev1.PodPending
		cur.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: f.Message, LastTransitionTime: metav1.Now()}}
		if api.updateStatus(ctx, podsR, p.Namespace, &cur) == nil {
			f.event(ctx, api, p, "FailedScheduling")
		}
	case !f.Unschedulable && p.Spec.NodeName == "":
		if api.create(ctx, podsR, p.Namespace, &corev1.Binding{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: f.Node}}, "binding") != nil {
			return
		}
		var cur corev1.Pod
		if api.get(ctx, podsR, p.Namespace, p.Name, &cur) != nil {
			return
		}
		cur.Status.Phase = corev1.PodPending
		for _, c := range p.Spec.Containers {
			cur.Status.ContainerStatuses = append(cur.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}})
		}
		api.updateStatus(ctx, podsR, p.Namespace, &cur)
		f.event(ctx, api, p, "FailedCreatePodSandbox")
	}
}

// event records a warning about pod p, as the scheduler or the kubelet would.
func (f *Fault) event(ctx context.Context, api API, p *corev1.Pod, reason string) {
	now := metav1.Now()
	e := &corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%s", p.Name, strings.ToLower(reason)), Namespace: p.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID, APIVersion: "v1"},
		Reason:         reason, Message: f.Message, Type: corev1.EventTypeWarning, Count: 1,
		FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: "llmbench-test"}}
	api.create(ctx, eventsR, p.Namespace, e)
}

// Deployment reads one Deployment.
func (a API) Deployment(ctx context.Context, ns, name string) (*appsv1.Deployment, error) {
	var d appsv1.Deployment
	return &d, a.get(ctx, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, ns, name, &d)
}
