package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestCacheConfoundAboveTheVerdict: a comparison confounded by the prefix cache says so before
// its verdict in every format — the statement above the headline in the terminal and in
// Markdown, in the headline, the first warning and the verdict tile of the HTML report, and
// as cache_confound in JSON — and a withheld metric reads "withheld", never better or worse.
func TestCacheConfoundAboveTheVerdict(t *testing.T) {
	c := fixtureComparison("spec")
	c.Regressed, c.Regressions = false, []string{}
	c.Metrics[0].Verdict = metrics.VerdictWithheld
	c.CacheConfound = &metrics.CacheConfound{BaseHitRate: 0.013, CandHitRate: 0.993, Excess: 0.98, Withheld: []string{"ttft.p50"},
		Statement: "CONFOUND: the prefix caches were not in the same state <here>"}
	c.Warnings = append([]string{c.CacheConfound.Statement}, c.Warnings...)
	head := ComparisonHeadline(c)
	if !strings.HasPrefix(head, "CONFOUNDED by the prefix cache (1 verdicts withheld) · no regression") || !strings.Contains(head, "1 withheld") {
		t.Errorf("headline %q", head)
	}
	var term, md, html bytes.Buffer
	if err := WriteComparisonTerminal(&term, c); err != nil {
		t.Fatal(err)
	}
	if err := WriteComparisonMarkdown(&md, c); err != nil {
		t.Fatal(err)
	}
	if err := WriteComparisonHTML(&html, c, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	before := func(name, out, first, second string) {
		i, j := strings.Index(out, first), strings.Index(out, second)
		if i < 0 || j < 0 || i > j {
			t.Errorf("%s: %q (at %d) does not come before %q (at %d)", name, first, i, second, j)
		}
	}
	before("terminal", term.String(), "CONFOUND: the prefix caches", "CONFOUNDED by the prefix cache")
	before("terminal", term.String(), "CONFOUNDED by the prefix cache", "metric ")
	before("markdown", md.String(), "> **CONFOUND: the prefix caches", "### ⚠️ llmbench compare: CONFOUNDED")
	before("html", html.String(), `id="headline" class="headline bad">CONFOUNDED`, "CONFOUND: the prefix caches were not in the same state &lt;here&gt;")
	before("html", html.String(), "CONFOUND: the prefix caches were not in the same state &lt;here&gt;", `data-k="compare.verdict">confounded`)
	if !strings.Contains(term.String(), "withheld") || strings.Contains(html.String(), "<here>") {
		t.Errorf("terminal lacks the withheld verdict, or the HTML shows unescaped text")
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		CacheConfound *metrics.CacheConfound `json:"cache_confound"`
		Warnings      []string               `json:"warnings"`
	}
	if err := json.Unmarshal(b, &back); err != nil || back.CacheConfound == nil || back.Warnings[0] != c.CacheConfound.Statement {
		t.Errorf("JSON: %v %+v", err, back)
	}
}
