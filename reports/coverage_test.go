package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestLatencyCoverage: a run with requests given up on while waiting for the server says,
// under its latency table in every format, how many sent requests the table holds and which
// are missing, and names the survivor bias; a run where every request finished says nothing.
func TestLatencyCoverage(t *testing.T) {
	s := fixtureSummary("m", "")
	s.Requests.Total, s.Requests.Succeeded, s.Requests.Failed = 21, 6, 15
	s.Requests.Failures = map[string]int{string(metrics.FailTimeoutHeaders): 14, string(metrics.FailConnect): 1}
	want := "Latency over the 6 of 21 sent requests that finished; not in it: timeout_headers 14 (waited out), connect 1 — survivor bias"
	var term, md, html bytes.Buffer
	if err := WriteTerminal(&term, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, s, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"terminal": strings.Join(strings.Fields(term.String()), " "), "markdown": strings.ReplaceAll(md.String(), `\`, ""), "html": html.String()} {
		if !strings.Contains(out, want) {
			t.Errorf("%s output lacks %q", name, want)
		}
	}
	s.Requests.Failed, s.Requests.Succeeded, s.Requests.Failures = 0, 21, map[string]int{}
	if c := latencyCoverage(s.Requests); c != "" {
		t.Errorf("no failure, coverage %q", c)
	}
}
