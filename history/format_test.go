package history

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func checkResultFixture() *CheckResult {
	return &CheckResult{Store: "h.db", Runs: 12, MinChange: 0.03, Alpha: 0.01, WeakAlpha: 0.05, MinSize: 3, Failed: true,
		Series: []Series{{Metric: "failures.fraction", Unit: "fraction", Better: "lower", Config: "trace=w-1 team=a|b",
			Changes: []Change{{Index: 6, RunID: 7, PrevID: 6, Start: time.Date(2026, 11, 7, 2, 0, 0, 0, time.UTC), Dir: "/r/n7",
				Before: Interval{Runs: 6}, After: Interval{Mean: 0.1, Lo: 0.08, Hi: 0.12, Runs: 6},
				Delta: 0.1, Relative: math.Inf(1), P: 0.005, Kind: "regression", Recent: true,
				Changed: []Diff{{"engine.faults", "", "status-503=0.1"}}}}}}}
}

// TestWriteCheckFormats: a change from zero reads "from 0" and is null in JSON (which has no
// infinity); Markdown escapes table-breaking text; text names the run, the flag and the verdict.
func TestWriteCheckFormats(t *testing.T) {
	res := checkResultFixture()
	var txt, md, js bytes.Buffer
	for f, w := range map[string]*bytes.Buffer{"text": &txt, "markdown": &md, "json": &js} {
		if err := WriteCheck(w, res, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	for _, want := range []string{"REGRESSION at run 7", "0% → 10% (from 0)", "engine.faults (none) → status-503=0.1", "FAIL: 1 regression(s)"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
	if !strings.Contains(md.String(), `team=a\|b`) || strings.Count(md.String(), "\n| failures") != 1 {
		t.Errorf("markdown row not escaped:\n%s", md.String())
	}
	var back struct {
		Failed bool `json:"failed"`
		Series []struct {
			Changes []struct {
				Relative *float64 `json:"relative"`
				RunID    int64    `json:"run_id"`
			} `json:"changes"`
		} `json:"series"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("json: %v\n%s", err, js.String())
	}
	if !back.Failed || back.Series[0].Changes[0].Relative != nil || back.Series[0].Changes[0].RunID != 7 {
		t.Errorf("json: %+v", back)
	}
	if err := WriteCheck(&txt, res, "yaml"); err == nil {
		t.Error("format yaml: no error")
	}
}
