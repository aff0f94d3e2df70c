package k8stest

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// API reads and writes the objects the tests and the agent use, typed, over client-go's
// dynamic client (the typed clientset would compile every API group's client into each
// test binary: minutes of CI under -race).
type API struct{ dyn dynamic.Interface }

var (
	podsR       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	nodesR      = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	configMapsR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretsR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	namespacesR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	jobsR       = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
)

func (a API) res(gvr schema.GroupVersionResource, ns string) dynamic.ResourceInterface {
	if ns == "" {
		return a.dyn.Resource(gvr)
	}
	return a.dyn.Resource(gvr).Namespace(ns)
}

func toU(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	return &unstructured.Unstructured{Object: m}, err
}

func (a API) get(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, into any) error {
	u, err := a.res(gvr, ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

func (a API) create(ctx context.Context, gvr schema.GroupVersionResource, ns string, obj runtime.Object, sub ...string) error {
	u, err := toU(obj)
	if err == nil {
		_, err = a.res(gvr, ns).Create(ctx, u, metav1.CreateOptions{}, sub...)
	}
	return err
}

func (a API) updateStatus(ctx context.Context, gvr schema.GroupVersionResource, ns string, obj runtime.Object) error {
	u, err := toU(obj)
	if err == nil {
		_, err = a.res(gvr, ns).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	}
	return err
}

// Pods lists the pods of namespace ns ("" = all) matching the label selector.
func (a API) Pods(ctx context.Context, ns, selector string) ([]corev1.Pod, error) {
	list, err := a.res(podsR, ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	out := make([]corev1.Pod, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Jobs lists namespace ns's Jobs.
func (a API) Jobs(ctx context.Context, ns string) ([]batchv1.Job, error) {
	list, err := a.res(jobsR, ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]batchv1.Job, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Job reads one Job.
func (a API) Job(ctx context.Context, ns, name string) (*batchv1.Job, error) {
	var j batchv1.Job
	return &j, a.get(ctx, jobsR, ns, name, &j)
}

func (a API) deletePod(ctx context.Context, ns, name string) error {
	zero := int64(0)
	return a.res(podsR, ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
}
