package usecase

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmbench/llmbench/refengine"
)

// ReplicaOptions are --replicas and --router: a simulated cluster of engine replicas.
type ReplicaOptions struct {
	Replicas int
	Router   string
	// Changed says which of the two flags were given.
	Changed Changed
}

// Check refuses fewer than one replica, an unknown router, and a router without replicas.
func (f *ReplicaOptions) Check() error {
	if f.Replicas < 1 {
		return fmt.Errorf("--replicas %d: want 1 or more engine replicas", f.Replicas)
	}
	if !slices.Contains(refengine.Routers, f.Router) {
		return fmt.Errorf("--router %q: want one of %s", clip(f.Router, 40), strings.Join(refengine.Routers, ", "))
	}
	if f.Changed.Has("router") && f.Replicas == 1 {
		return fmt.Errorf("--router %s routes between replicas; give --replicas N (N > 1) too, or drop --router", f.Router)
	}
	return nil
}

// Given reports whether --replicas or --router was given.
func (f *ReplicaOptions) Given() bool { return f.Changed.Has("replicas") || f.Changed.Has("router") }
