package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/refengine"
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
	fs.StringVar(&f.router, "router", refengine.RouterRoundRobin, "how --replicas route each request at arrival: "+strings.Join(refengine.Routers, ", ")+
		" (least-loaded: fewest outstanding requests; prefix-aware: llm-d's prefix/queue/KV-cache scores with a load guard; see docs/engine.md)")
	return f
}

// check validates the flags; a --router without replicas to route between is refused.
func (f *replicaFlags) check() error {
	if f.replicas < 1 {
		return fmt.Errorf("--replicas %d: want 1 or more engine replicas", f.replicas)
	}
	if !slices.Contains(refengine.Routers, f.router) {
		return fmt.Errorf("--router %q: want one of %s", clip(f.router, 40), strings.Join(refengine.Routers, ", "))
	}
	if fl := f.fs.Lookup("router"); fl != nil && fl.Changed && f.replicas == 1 {
		return fmt.Errorf("--router %s routes between replicas; give --replicas N (N > 1) too, or drop --router", f.router)
	}
	return nil
}

// changed reports whether --replicas or --router was given.
func (f *replicaFlags) changed() bool {
	for _, n := range []string{"replicas", "router"} {
		if fl := f.fs.Lookup(n); fl != nil && fl.Changed {
			return true
		}
	}
	return false
}
