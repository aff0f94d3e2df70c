package judge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/llmbench/llmbench/internal/safetext"
)

// Labels are human pass/fail labels by request id.
type Labels map[string]bool

// maxLabelLine bounds one line of a labels file.
const maxLabelLine = 1 << 20

// ReadLabels reads a labels file: JSON Lines, one {"id": "...", "label": "pass"|"fail"} (or
// "label": true|false) per line; blank lines and lines starting with # are skipped. Errors name
// the file, the line and the field.
func ReadLabels(r io.Reader, name string) (Labels, error) {
	out := Labels{}
	first := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLabelLine)
	bad := func(line int, field, why string) error {
		if field != "" {
			field += ": "
		}
		return fmt.Errorf("%s:%d: %s%s", safetext.Escape(name, 300), line, field, safetext.Escape(why, 300))
	}
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, bad(n, "", `each line must be one JSON object {"id": "...", "label": "pass" or "fail"}: `+err.Error())
		}
		for k := range rec {
			if k != "id" && k != "label" {
				return nil, bad(n, k, "unknown field (a label line has id and label)")
			}
		}
		var id string
		if raw, ok := rec["id"]; !ok {
			return nil, bad(n, "id", "missing (required: the request id)")
		} else if json.Unmarshal(raw, &id) != nil || id == "" {
			return nil, bad(n, "id", "must be a non-empty string (got "+safetext.Quote(string(raw), 40)+")")
		}
		raw, ok := rec["label"]
		if !ok {
			return nil, bad(n, "label", `missing (required: "pass" or "fail")`)
		}
		var pass bool
		var s string
		switch {
		case json.Unmarshal(raw, &pass) == nil:
		case json.Unmarshal(raw, &s) == nil && (strings.EqualFold(s, "pass") || strings.EqualFold(s, "fail")):
			pass = strings.EqualFold(s, "pass")
		default:
			return nil, bad(n, "label", `must be "pass", "fail", true or false (got `+safetext.Quote(string(raw), 40)+")")
		}
		if l, dup := first[id]; dup {
			return nil, bad(n, "id", fmt.Sprintf("duplicate id %s (first on line %d)", safetext.Quote(id, 64), l))
		}
		first[id] = n
		out[id] = pass
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", safetext.Escape(name, 300), err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no labels", safetext.Escape(name, 300))
	}
	return out, nil
}

// Agreement is how well a judge's verdicts agree with human labels.
type Agreement struct {
	// Compared counts ids with both a parsed verdict and a label; Agree those where they
	// match. JudgeOnly counts verdicts without a label, LabelOnly labels without a verdict
	// (not judged, or the judge call failed).
	Compared, Agree      int
	JudgeOnly, LabelOnly int
	// Confusion: judge pass and human pass (BothPass), both fail, judge pass / human fail
	// (FalsePass) and judge fail / human pass (FalseFail).
	BothPass, BothFail, FalsePass, FalseFail int
	// Accuracy is Agree / Compared; Kappa is Cohen's kappa, (po − pe) / (1 − pe), NaN when
	// the chance agreement pe is 1 (both raters gave one label to everything).
	Accuracy, Kappa float64
}

// Calibrate compares rubric verdicts with labels.
func Calibrate(vs []Verdict, labels Labels) Agreement {
	var a Agreement
	seen := map[string]bool{}
	for _, v := range vs {
		if v.Err != "" {
			continue
		}
		human, ok := labels[v.ID]
		if !ok {
			a.JudgeOnly++
			continue
		}
		seen[v.ID] = true
		a.Compared++
		switch {
		case v.Pass && human:
			a.BothPass++
		case !v.Pass && !human:
			a.BothFail++
		case v.Pass:
			a.FalsePass++
		default:
			a.FalseFail++
		}
	}
	for id := range labels {
		if !seen[id] {
			a.LabelOnly++
		}
	}
	a.Agree = a.BothPass + a.BothFail
	a.Accuracy, a.Kappa = math.NaN(), math.NaN()
	if a.Compared == 0 {
		return a
	}
	n := float64(a.Compared)
	po := float64(a.Agree) / n
	judgePass := float64(a.BothPass+a.FalsePass) / n
	humanPass := float64(a.BothPass+a.FalseFail) / n
	pe := judgePass*humanPass + (1-judgePass)*(1-humanPass)
	a.Accuracy = po
	if pe < 1 {
		a.Kappa = (po - pe) / (1 - pe)
	}
	return a
}
