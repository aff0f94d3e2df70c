package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/usecase"
)

// replicaFlags simulate a cluster of identical engines behind a router (simulate, sweep
// --simulate).
type replicaFlags struct {
	fs       *pflag.FlagSet
	replicas int
	router   string
}

func addReplicaFlags(fs *pflag.FlagSet) *replicaFlags {
	f := &replicaFlags{fs: fs}
	fs.IntVar(&f.replicas, "replicas", 1, "simulate N independent engine replicas (each the full --gpu/--tp setup) behind --router on one virtual timeline")
	fs.StringVar(&f.router, "router", usecase.RouterRoundRobin, "how --replicas route each request at arrival: "+strings.Join(usecase.Routers, ", ")+
		" (least-loaded: fewest outstanding requests; prefix-aware: llm-d's prefix/queue/KV-cache scores with a load guard; see docs/engine.md)")
	return f
}

func (f *replicaFlags) opts() usecase.ReplicaOptions {
	return usecase.ReplicaOptions{Replicas: f.replicas, Router: f.router, Changed: f.fs.Changed}
}
