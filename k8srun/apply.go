package k8srun

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmbench/llmbench/k8sjob"
)

// object is one created object, to remove it again when a later one cannot be created.
type object struct{ kind, name string }

// apply creates the manifest's objects in order in c.Namespace. When one cannot be created
// the ones created before it are deleted again, so a refused run leaves nothing behind.
func (c *Cluster) apply(ctx context.Context, m *k8sjob.Manifest, run string) error {
	var made []object
	for _, obj := range m.Objects() {
		o, err := c.create(ctx, obj)
		if err != nil {
			undo := c.deleteObjects(context.WithoutCancel(ctx), made)
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
	ns, opts := c.Namespace, metav1.CreateOptions{FieldValidation: "Strict"}
	var err error
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		o.Namespace = ns
		_, err = c.Client.CoreV1().ConfigMaps(ns).Create(ctx, o, opts)
		return object{"ConfigMap", o.Name}, err
	case *corev1.PersistentVolumeClaim:
		o.Namespace = ns
		_, err = c.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, o, opts)
		return object{"PersistentVolumeClaim", o.Name}, err
	case *appsv1.Deployment:
		o.Namespace = ns
		_, err = c.Client.AppsV1().Deployments(ns).Create(ctx, o, opts)
		return object{"Deployment", o.Name}, err
	case *corev1.Service:
		o.Namespace = ns
		_, err = c.Client.CoreV1().Services(ns).Create(ctx, o, opts)
		return object{"Service", o.Name}, err
	case *batchv1.Job:
		o.Namespace = ns
		_, err = c.Client.BatchV1().Jobs(ns).Create(ctx, o, opts)
		return object{"Job", o.Name}, err
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
	ns := c.Namespace
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	switch o.kind {
	case "ConfigMap":
		return c.Client.CoreV1().ConfigMaps(ns).Delete(ctx, o.name, opts)
	case "PersistentVolumeClaim":
		return c.Client.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, o.name, opts)
	case "Deployment":
		return c.Client.AppsV1().Deployments(ns).Delete(ctx, o.name, opts)
	case "Service":
		return c.Client.CoreV1().Services(ns).Delete(ctx, o.name, opts)
	case "Job":
		return c.Client.BatchV1().Jobs(ns).Delete(ctx, o.name, opts)
	}
	return fmt.Errorf("unexpected kind %s", o.kind)
}
