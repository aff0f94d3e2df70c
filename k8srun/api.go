package k8srun

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The resources a run uses. The dynamic client keeps the binary small: the typed clientset
// registers every API group's types and apply configurations (measured: llmbench 49 MB →
// 78 MB with the three typed clients, 91 MB with the whole clientset; 52 MB with this).
var (
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	claims      = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	services    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	pods        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	namespaces  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	jobs        = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
)

func (c *Cluster) createObject(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	_, err = c.dyn.Resource(gvr).Namespace(c.Namespace).Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{FieldValidation: "Strict"})
	return err
}

func (c *Cluster) job(ctx context.Context, name string) (*batchv1.Job, error) {
	u, err := c.dyn.Resource(jobs).Namespace(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var j batchv1.Job
	return &j, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &j)
}

func (c *Cluster) listPods(ctx context.Context, selector string) ([]corev1.Pod, error) {
	u, err := c.dyn.Resource(pods).Namespace(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	out := make([]corev1.Pod, len(u.Items))
	for i := range u.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Items[i].Object, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *Cluster) patchJob(ctx context.Context, name string, patch []byte) error {
	_, err := c.dyn.Resource(jobs).Namespace(c.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func (c *Cluster) deleteResource(ctx context.Context, gvr schema.GroupVersionResource, name string) error {
	background := metav1.DeletePropagationBackground
	return c.dyn.Resource(gvr).Namespace(c.Namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background})
}

// podLog reads a container's log (the last tail lines when tail > 0), at most 64 MiB.
func (c *Cluster) podLog(ctx context.Context, pod, container string, tail int) ([]byte, error) {
	q := url.Values{"container": {container}}
	if tail > 0 {
		q.Set("tailLines", strconv.Itoa(tail))
	}
	u := fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s/log?%s", c.Host, url.PathEscape(c.Namespace), url.PathEscape(pod), q.Encode())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, apierrors.NewGenericServerResponse(resp.StatusCode, "get", pods.GroupResource(), pod, string(body[:min(len(body), 300)]), 0, false)
	}
	return body, err
}

var (
	nodes  = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	events = schema.GroupVersionResource{Version: "v1", Resource: "events"}
)

// listNodes reads every node of the cluster (a cluster-scoped read: a user who may not list
// nodes gets a Forbidden error).
func (c *Cluster) listNodes(ctx context.Context) ([]corev1.Node, error) {
	u, err := c.dyn.Resource(nodes).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]corev1.Node, len(u.Items))
	for i := range u.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Items[i].Object, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// listBoundPods reads the pods of every namespace that hold their node's resources: bound to
// a node and neither Succeeded nor Failed.
func (c *Cluster) listBoundPods(ctx context.Context) ([]corev1.Pod, error) {
	u, err := c.dyn.Resource(pods).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"})
	if err != nil {
		return nil, err
	}
	out := make([]corev1.Pod, len(u.Items))
	for i := range u.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Items[i].Object, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// listWarnings reads the namespace's Warning events.
func (c *Cluster) listWarnings(ctx context.Context) ([]corev1.Event, error) {
	u, err := c.dyn.Resource(events).Namespace(c.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "type=Warning"})
	if err != nil {
		return nil, err
	}
	out := make([]corev1.Event, len(u.Items))
	for i := range u.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Items[i].Object, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *Cluster) patchDeployment(ctx context.Context, name string, patch []byte) error {
	_, err := c.dyn.Resource(deployments).Namespace(c.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
