package progress

import (
	"strings"
	"testing"
	"time"
)

// TestNoteLine: Options.Note's line (the saturation watch's) ends the plain line and is a line
// of its own in the terminal panel; an empty note adds nothing.
func TestNoteLine(t *testing.T) {
	note := "saturation: over-saturated at 48 req/s (completed 2.2 req/s)"
	for _, terminal := range []bool{false, true} {
		var b strings.Builder
		c := &clock{t: time.Unix(0, 0)}
		d := Start(Options{W: &b, Terminal: terminal, Snap: func() Snapshot { return Snapshot{} }, Every: time.Hour, Now: c.now,
			Note: func() string { return note }})
		d.Stop()
		got := b.String()
		switch {
		case !terminal && !strings.HasSuffix(strings.TrimSpace(got), " · "+note):
			t.Errorf("plain line %q", got)
		case terminal && !strings.Contains(got, "\n\r\033[K"+note+"\n"):
			t.Errorf("panel %q", got)
		}
	}
	var b strings.Builder
	d := Start(Options{W: &b, Snap: func() Snapshot { return Snapshot{} }, Every: time.Hour, Note: func() string { return "" }})
	d.Stop()
	if strings.Contains(b.String(), "saturation") || strings.HasSuffix(strings.TrimSpace(b.String()), "·") {
		t.Errorf("empty note shown: %q", b.String())
	}
}
