// Package k8sjob builds the Kubernetes manifest of a sharded llmbench run (llmbench k8s job):
// a ConfigMap holding the trace, a PersistentVolumeClaim for the results, a time server
// (Deployment and Service running `llmbench clock`) the shards measure their clock offsets
// against, an Indexed Job whose pod I runs shard I (`llmbench run --shard auto/N` with a
// common --start-at), and a suspended Job that merges the shards once they are done.
// Every object is a k8s.io/api type; the YAML is what sigs.k8s.io/yaml makes of them.
//
// It must not do network I/O, talk to a cluster, or read files or the environment: the CLI
// passes the trace's bytes and the time in.
package k8sjob
