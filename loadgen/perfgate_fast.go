//go:build !perfgate_slow

package loadgen

// perfgateSlowdown does nothing: only a build with -tags perfgate_slow, made by the
// performance gate's test to be slower by construction, burns CPU here (perfgate_slow.go).
func perfgateSlowdown() {}
