package reports

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/llmbench/llmbench/metrics"
)

func TestWriteTerminalFits100Columns(t *testing.T) {
	var buf bytes.Buffer
	s := fixtureSummary("llama-3.1-8b-instruct", "client CPU was at 3% of capacity; fine")
	s.Client.CPUStealFraction = 0.123 // a virtual machine's host took some: the client line says so
	if err := WriteTerminal(&buf, s); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	t.Log("\n" + out)
	for i, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > termWidth {
			t.Errorf("line %d has %d columns (> %d): %q", i+1, n, termWidth, line)
		}
	}
	for _, want := range []string{"goodput 94.0% of 12.0 req/s within SLO", "TTFT", "ITL per chunk", "Queue",
		"timeout_idle 2", "client healthy", "CPU steal 12.3%", "chat", "rag"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q", want)
		}
	}
}

func TestWriteTerminalStripsControlCharacters(t *testing.T) {
	var buf bytes.Buffer
	s := fixtureSummary("evil\x1b[2J\rmodel", "warn \x1b]0;title\x07 here")
	if err := WriteTerminal(&buf, s); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(buf.String(), "\x1b\r\x07") {
		t.Fatalf("control characters reached the terminal: %q", buf.String())
	}
}

func TestWriteComparisonTerminalFits100Columns(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteComparisonTerminal(&buf, fixtureComparison("spec-decode")); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for i, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > termWidth {
			t.Errorf("line %d has %d columns: %q", i+1, n, line)
		}
	}
	for _, want := range []string{"REGRESSION: ttft.p95", "REGRESSED *", "ttft.p95>+5% BROKEN", "[+9.8%, +18.3%]"} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison output lacks %q:\n%s", want, out)
		}
	}
}

// TestClientLineShowsStealFromStealShown: the Client line names the host's CPU steal once it is
// worth a look (a run on a quiet or bare-metal machine prints no "CPU steal 0.0%").
func TestClientLineShowsStealFromStealShown(t *testing.T) {
	for steal, want := range map[float64]bool{0: false, 0.0004: false, stealShown: true, 0.05: true} {
		if got := strings.Contains(clientLine(metrics.Client{CPUStealFraction: steal}), "CPU steal"); got != want {
			t.Errorf("steal %v: shown %v, want %v", steal, got, want)
		}
	}
}
