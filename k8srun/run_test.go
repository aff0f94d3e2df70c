package k8srun

import (
	"strings"
	"testing"

	"github.com/llmbench/llmbench/k8sjob"
)

// TestSafeLines: a pod's log tail keeps its last lines, each cut and with control characters
// escaped, so that outside text cannot rewrite the terminal.
func TestSafeLines(t *testing.T) {
	log := "one\ntwo\x1b[2Jcleared\n" + strings.Repeat("x", 5000) + "\nlast\n"
	got := strings.Split(safeLines(log, 3), "\n")
	if len(got) != 3 || got[2] != "last" || strings.ContainsRune(got[0], 0x1b) || len(got[1]) > 310 {
		t.Fatalf("safeLines = %q", got)
	}
	if e := (&PullError{Pod: "p", Reason: "ErrImagePull: \x1b]0;evil\x07"}).Error(); strings.ContainsAny(e, "\x1b\x07") {
		t.Fatalf("PullError passes control characters: %q", e)
	}
}

// TestSplitSummary: the last valid summary line of a merge log is the summary; an invalid one
// (cut JSON) is kept as log text, not taken.
func TestSplitSummary(t *testing.T) {
	log := "merged 3 of 3 shards\n" + k8sjob.SummaryPrefix + `{"schema":"old"}` + "\n" +
		k8sjob.SummaryPrefix + `{"schema":"new"}` + "\n" + k8sjob.SummaryPrefix + `{"cut":` + "\n"
	sum, rest := splitSummary([]byte(log))
	if string(sum) != `{"schema":"new"}` || !strings.Contains(rest, "merged 3 of 3") || !strings.Contains(rest, `{"cut":`) {
		t.Fatalf("summary %q, rest %q", sum, rest)
	}
	if sum, _ := splitSummary([]byte("no summary here\n")); sum != nil {
		t.Fatalf("a log without the line gave %q", sum)
	}
}
