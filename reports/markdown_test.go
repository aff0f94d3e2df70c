package reports

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriteMarkdownEscapesOutsideText(t *testing.T) {
	var buf bytes.Buffer
	s := fixtureSummary("m<script>alert(1)</script>|x", "bad | warning <img src=x onerror=alert(1)>")
	s.ByClass["cl|ass<b>"] = s.ByClass["chat"]
	if err := WriteMarkdown(&buf, s); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, bad := range []string{"<script>", "<img", "<b>", "ass|"} {
		if strings.Contains(out, bad) {
			t.Errorf("markdown contains unescaped %q", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;", "| TTFT | 204.0 | 180.0 |", "goodput 94.0% of 12.0 req/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}
