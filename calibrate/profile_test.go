package calibrate

import (
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/refengine/perf"
)

// TestFormatProfileRoundTrip: the profile calibrate writes is a profile perf reads (the
// GPU's constants), and its calibration block gives back the learned limits and residuals.
func TestFormatProfileRoundTrip(t *testing.T) {
	g, _ := perf.LookupGPU("h100")
	g.BWEff, g.KVBWEff, g.FLOPEff, g.StepOverhead = 0.5, 0.45, 0.4, 2*time.Millisecond
	res := &Result{GPU: g, MaxNumSeqs: 4, CapSource: CapFromQueue, MaxNumBatchedTokens: 512, FrontEnd: 1500 * time.Microsecond,
		Residuals: []Residual{{Run: "low", Quantity: "ttft_p50", Unit: "ms", Measured: 100, Simulated: 130, RelErr: 0.3}},
		Warnings:  []string{"the engine's model cannot fit these runs: ttft_p50 +30%"}}
	data, err := FormatProfile(nil, res)
	if err != nil {
		t.Fatal(err)
	}
	_, gpus, err := perf.ParseProfiles(data, "p.json")
	if err != nil || len(gpus) != 1 || gpus[0].BWEff != 0.5 || gpus[0].StepOverhead != 2*time.Millisecond {
		t.Fatalf("perf reads %+v, %v\n%s", gpus, err, data)
	}
	c, err := ParseProfileCalibration(data, "p.json")
	if err != nil || c == nil {
		t.Fatalf("calibration: %+v %v", c, err)
	}
	if c.GPU != g.Name || c.MaxNumSeqs != 4 || c.CapSource != CapFromQueue || c.MaxNumBatchedTokens != 512 || c.FrontEndUS != 1500 ||
		len(c.Residuals) != 1 || c.Residuals[0] != res.Residuals[0] || len(c.Warnings) != 1 {
		t.Errorf("calibration read back %+v", c)
	}
	plain, err := perf.FormatProfiles(nil, []perf.GPU{g})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := ParseProfileCalibration(plain, "plain.json"); c != nil || err != nil {
		t.Errorf("a profile without a block: %+v %v", c, err)
	}
}

func TestParseProfileCalibrationErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"gpus": [], "calibration": {"max_num_seqs": -1}}`, "max_num_seqs must be in"},
		{`{"gpus": [], "calibration": {"max_num_batched_tokens": 99999999}}`, "max_num_batched_tokens must be in"},
		{`{"gpus": [], "calibration": {"front_end_us": -3}}`, "front_end_us"},
		{`{"gpus": [], "calibration": {"max_num_seq": 4}}`, "unknown field"},
		{`{"gpus": [], "calibration": 7}`, "calibration"},
		{`{"gpus": [`, "invalid profile JSON"},
	} {
		_, err := ParseProfileCalibration([]byte(c.in), "p.json")
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "p.json") {
			t.Errorf("%s: %v, want an error naming p.json and %q", c.in, err, c.want)
		}
	}
}

// FuzzParseProfileCalibration: any file gives a block within bounds or an error, never a
// panic.
func FuzzParseProfileCalibration(f *testing.F) {
	f.Add([]byte(`{"gpus": [], "calibration": {"gpu": "h100-sxm", "max_num_seqs": 4, "max_num_batched_tokens": 512,
  "front_end_us": 12.5, "residuals": [{"run": "r", "quantity": "ttft_p50", "unit": "ms", "measured": 1, "simulated": 2, "rel_err": 1}],
  "warnings": ["w"]}}`))
	f.Add([]byte(`{"calibration": null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseProfileCalibration(data, "fuzz.json")
		if err != nil || c == nil {
			return
		}
		if c.MaxNumSeqs < 0 || c.MaxNumSeqs > maxCap || c.MaxNumBatchedTokens < 0 || c.MaxNumBatchedTokens > maxCap || !(c.FrontEndUS >= 0) {
			t.Errorf("accepted out-of-bounds block %+v", c)
		}
	})
}
