// Package k8srun runs a sharded llmbench run on a Kubernetes cluster from start to end
// (llmbench k8s run): it creates the objects k8sjob builds through client-go, follows the
// shard pods, resumes the merge Job once every shard has finished, waits for it, and brings
// the merged summary back from the merge pod's log. Delete removes a run's objects.
//
// It talks only to the Kubernetes API it is given; it reads no files and no environment (the
// CLI loads the kubeconfig with Connect and passes the client in).
package k8srun
