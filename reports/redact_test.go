package reports

import (
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
)

// TestRunFactsRedacted: an endpoint or command line that still holds URL secrets (a summary
// written by an older version) shows none of them, with the one marker of internal/redact.
func TestRunFactsRedacted(t *testing.T) {
	facts := runFacts(metrics.RunInfo{
		Endpoint: "https://sk-USERINFO1@h/v1?api-key=QSECRETabc",
		Command:  "llmbench run --endpoint http://alice:PASSW0RDxyz@h/v1?api-key=QSECRETabc --api-key zzzz",
	})
	var all strings.Builder
	for _, f := range facts {
		all.WriteString(f.Label + "=" + f.Value + "\n")
	}
	for _, c := range []string{"sk-USERINFO1", "QSECRETabc", "alice", "PASSW0RDxyz", "zzzz", "***"} {
		if strings.Contains(all.String(), c) {
			t.Errorf("%q in the report facts:\n%s", c, all.String())
		}
	}
}
