package metrics

import "sort"

// Pareto sweeps across server configurations (issue 39 item 3, docs/capacity.md): each
// configuration's load points that meet the SLO become points of throughput per GPU against
// throughput per user, and the frontier is the set no other point beats on both.

// ParetoPoint is one load point of one server configuration.
type ParetoPoint struct {
	// Config names the server configuration ("max-num-seqs=4"); Dir is the point's results
	// directory.
	Config string `json:"config"`
	Dir    string `json:"dir,omitempty"`
	// Load is the point's offered load (req/s, or the concurrency).
	Load float64 `json:"load"`
	// PerGPU is the output tokens per second per GPU of the server; PerUser the output tokens
	// per second each request saw while decoding (1000 / TPOT p50 in ms).
	PerGPU  float64 `json:"output_tokens_per_s_per_gpu"`
	PerUser float64 `json:"output_tokens_per_s_per_user"`
	// Dominated is true when another point has at least as much of both and more of one.
	Dominated bool `json:"dominated"`
}

// ParetoPoints are the points of one configuration's sweep that meet the SLO: a goodput
// fraction of at least target, not saturated, with a TPOT. gpus is the GPUs the server used
// (at least 1 is assumed).
func ParetoPoints(config string, gpus float64, points []SweepPoint, target float64) []ParetoPoint {
	if gpus <= 0 {
		gpus = 1
	}
	var out []ParetoPoint
	for _, p := range points {
		if p.Saturated || p.Limited != "" || p.GoodputFraction < target || p.TPOTP50 <= 0 {
			continue
		}
		out = append(out, ParetoPoint{Config: config, Dir: p.Dir, Load: p.Rate, PerGPU: p.OutputTokensPerS / gpus, PerUser: 1000 / p.TPOTP50})
	}
	return out
}

// MarkDominated sets Dominated on every point another point beats, and orders the points by
// throughput per user (then per GPU, descending): the frontier is the points left unmarked.
func MarkDominated(points []ParetoPoint) {
	for i := range points {
		points[i].Dominated = false
		for j := range points {
			a, b := points[j], points[i]
			if a.PerGPU >= b.PerGPU && a.PerUser >= b.PerUser && (a.PerGPU > b.PerGPU || a.PerUser > b.PerUser) {
				points[i].Dominated = true
				break
			}
		}
	}
	sort.SliceStable(points, func(i, j int) bool {
		if points[i].PerUser != points[j].PerUser {
			return points[i].PerUser < points[j].PerUser
		}
		return points[i].PerGPU > points[j].PerGPU
	})
}
