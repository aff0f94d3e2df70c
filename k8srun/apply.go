package k8srun

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/llmbench/llmbench/k8sjob"
)

// object is one created object, to remove it again when a later one cannot be created.
type object struct{ kind, name string }

// apply creates the manifest's objects in order in c.Namespace. When one cannot be created
// the ones created before it are deleted again, so a refused run leaves nothing behind.
// The removal is bounded by undoTimeout, also when ctx has ended (an interrupt).
func (c *Cluster) apply(ctx context.Context, m *k8sjob.Manifest, run string, undoTimeout time.Duration) error {
	var made []object
	for _, obj := range m.Objects() {
		o, err := c.create(ctx, obj)
		if err != nil {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
			undo := c.deleteObjects(uctx, made)
			cancel()
			if apierrors.IsAlreadyExists(err) {
				err = fmt.Errorf("%s %s already exists in namespace %s (an earlier run named %s?): `llmbench k8s delete %s --namespace %s` removes its objects, or pass another --name",
					o.kind, o.name, c.Namespace, run, run, c.Namespace)
			} else {
				err = fmt.Errorf("create %s %s in namespace %s: %w", o.kind, o.name, c.Namespace, err)
			}
			return errors.Join(err, undo)
		}
		made = append(made, o)
	}
	return nil
}

func (c *Cluster) create(ctx context.Context, obj any) (object, error) {
	ns := c.Namespace
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		o.Namespace = ns
		return object{"ConfigMap", o.Name}, c.createObject(ctx, configMaps, o)
	case *corev1.PersistentVolumeClaim:
		o.Namespace = ns
		return object{"PersistentVolumeClaim", o.Name}, c.createObject(ctx, claims, o)
	case *appsv1.Deployment:
		o.Namespace = ns
		return object{"Deployment", o.Name}, c.createObject(ctx, deployments, o)
	case *corev1.Service:
		o.Namespace = ns
		return object{"Service", o.Name}, c.createObject(ctx, services, o)
	case *batchv1.Job:
		o.Namespace = ns
		return object{"Job", o.Name}, c.createObject(ctx, jobs, o)
	}
	return object{}, fmt.Errorf("unexpected object %T", obj)
}

// Delete removes every object of the run named name from c.Namespace (the Jobs with their
// pods) and returns what it removed, "Kind name" each; objects already gone are skipped.
func (c *Cluster) Delete(ctx context.Context, name string) ([]string, error) {
	objs := []object{{"Job", name + "-merge"}, {"Job", name + "-shards"}, {"Service", name + "-clock"},
		{"Deployment", name + "-clock"}, {"PersistentVolumeClaim", name + "-results"}, {"ConfigMap", name + "-trace"}}
	var gone []string
	for _, o := range objs {
		err := c.deleteObject(ctx, o)
		switch {
		case err == nil:
			gone = append(gone, o.kind+" "+o.name)
		case apierrors.IsNotFound(err):
		default:
			return gone, fmt.Errorf("delete %s %s in namespace %s: %w", o.kind, o.name, c.Namespace, err)
		}
	}
	return gone, nil
}

func (c *Cluster) deleteObjects(ctx context.Context, objs []object) error {
	var errs []error
	for i := len(objs) - 1; i >= 0; i-- {
		if err := c.deleteObject(ctx, objs[i]); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove %s %s again: %w", objs[i].kind, objs[i].name, err))
		}
	}
	return errors.Join(errs...)
}

func (c *Cluster) deleteObject(ctx context.Context, o object) error {
	gvr, ok := map[string]schema.GroupVersionResource{"ConfigMap": configMaps, "PersistentVolumeClaim": claims,
		"Deployment": deployments, "Service": services, "Job": jobs}[o.kind]
	if !ok {
		return fmt.Errorf("unexpected kind %s", o.kind)
	}
	return c.deleteResource(ctx, gvr, o.name)
}
