package reports

import (
	"bytes"
	"strings"
	"testing"
)

// TestCancelledShownEverywhere: a run with cancelled requests says so in the terminal summary,
// Markdown and HTML, apart from the failures, with goodput over the requests not cancelled; a
// run without any shows no cancellation text at all.
func TestCancelledShownEverywhere(t *testing.T) {
	s := fixtureSummary("m", "")
	s.Requests.Total += 25
	s.Requests.Cancelled = 25
	s.Goodput.SLO = map[string]float64{"ttft": 500}
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
	want := "25 cancelled by the client"
	for name, out := range map[string]string{"terminal": term.String(), "markdown": md.String()} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("%s does not say %q", name, want)
		}
	}
	of := " of " + fmtInt(int64(s.Requests.Total-25))
	if !strings.Contains(term.String(), of) || !strings.Contains(md.String(), of) {
		t.Errorf("terminal goodput is not over the %d requests not cancelled:\n%s", s.Requests.Total-25, term.String())
	}
	if !strings.Contains(html.String(), `<td>cancelled by the client</td><td data-k="requests.cancelled">25</td>`) || !strings.Contains(html.String(), "3 failed · 25 cancelled") {
		t.Errorf("HTML has no cancelled outcome row or tile note")
	}
	plain := fixtureSummary("m", "")
	var b bytes.Buffer
	if err := WriteMarkdown(&b, plain); err != nil {
		t.Fatal(err)
	}
	WriteTerminal(&b, plain)
	if strings.Contains(b.String(), "cancelled") {
		t.Errorf("a run without cancellations mentions them")
	}
}
