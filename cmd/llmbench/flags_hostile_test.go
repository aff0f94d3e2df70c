package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/redact"
	"github.com/llmbench/llmbench/usecase"
)

// TestRunRefusesBadTargetFlags: flags that would fail every request are refused before the
// run starts, with a message naming the flag and no secret.
func TestRunRefusesBadTargetFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--endpoint", "http://127.0.0.1:99999999"}, "port"},
		{[]string{"--endpoint", "http://127.0.0.1:0"}, "port"},
		{[]string{"--endpoint", "ftp://127.0.0.1:80"}, "want http"},
		{[]string{"--endpoint", "http://127.0.0.1:8000", "--header", "X-Auth: a\r\nX-Evil: HDRSECRETx"}, "line break"},
		{[]string{"--endpoint", "http://127.0.0.1:8000", "--header", "X Bad: v"}, "the name"},
		{[]string{"--endpoint", "http://127.0.0.1:8000", "--timeout-idle", "-1s"}, "must be >= 0"},
		{[]string{"--endpoint", "http://127.0.0.1:8000", "--max-line-bytes", "10"}, "--max-line-bytes"},
	}
	for _, tt := range tests {
		app := newTestApp(nil)
		args := append([]string{"run", "--trace", chatSmall, "--no-progress", "--out", t.TempDir()}, tt.args...)
		if code := app.cli(args...); code == 0 {
			t.Errorf("%q: exit 0", tt.args)
			continue
		}
		msg := app.err.String()
		if !strings.Contains(msg, tt.want) || strings.Contains(msg, "HDRSECRETx") {
			t.Errorf("%q: %s", tt.args, msg)
		}
	}
}

// TestRunRefusesLongSpan: a trace whose replay would last years is refused before starting,
// with the span printed, unless --max-span allows it.
func TestRunRefusesLongSpan(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.jsonl")
	os.WriteFile(trace, []byte(`{"arrival_s":0,"input_tokens":4,"output_tokens":2}`+"\n"+
		`{"arrival_s":0,"input_tokens":4,"output_tokens":2,"session":"s","turn":1}`+"\n"+
		`{"arrival_s":0,"input_tokens":4,"output_tokens":2,"session":"s","turn":2,"think_s":200000}`+"\n"), 0o644)
	for _, cmd := range [][]string{{"run"}, {"simulate"}} {
		app := newTestApp(nil)
		if code := app.cli(append(cmd, "--trace", trace, "--no-progress", "--out", filepath.Join(dir, "o"))...); code == 0 {
			t.Fatalf("%s: a 2.3-day trace ran", cmd)
		}
		if msg := app.err.String(); !strings.Contains(msg, "200000 s") || !strings.Contains(msg, "--max-span") {
			t.Errorf("%s: %s", cmd, msg)
		}
	}
	app := newTestApp(nil)
	mustRun(t, app, "simulate", "--trace", trace, "--out", filepath.Join(dir, "o"), "--max-span", "72h")
	app = newTestApp(nil) // 2.3 days at 10^6 times the rate is 0.2 s: no --max-span needed
	mustRun(t, app, "run", "--trace", trace, "--no-progress", "--out", filepath.Join(dir, "o2"), "--rate-scale", "1e6")
	app = newTestApp(nil)
	mustRun(t, app, "trace", "validate", trace)
	if out := app.out.String(); !strings.Contains(out, "warning: a replay would span") {
		t.Errorf("trace validate: %s", out)
	}
}

func TestCommandLineRedaction(t *testing.T) {
	got := usecase.CommandLine([]string{"run", "--endpoint", "https://sk-USERINFO1@h:8443/v1?api-key=QSECRETabc",
		"--header", "Authorization: Bearer SECRET123", "--trace", "t.jsonl", "--note=QSECRETabc"})
	for _, c := range []string{"sk-USERINFO1", "QSECRETabc", "SECRET123", "***"} {
		if strings.Contains(got, c) {
			t.Errorf("%q in %s", c, got)
		}
	}
	if !strings.Contains(got, "--trace t.jsonl") || !strings.Contains(got, "https://<redacted>@h:8443/v1?api-key=<redacted>") {
		t.Errorf("command line %s", got)
	}
	if got := usecase.CommandLine([]string{"ab", "--a-endpoint=http://h/v1?key=ARMSECRET1", "--a-name", "ARMSECRET1"}); strings.Contains(got, "ARMSECRET1") {
		t.Errorf("ab command line %s", got)
	}
	if got := redact.URL("http://alice:PASSW0RDxyz@127.0.0.1:1/v1?api-key=QSECRETabc"); got != "http://<redacted>@127.0.0.1:1/v1?api-key=<redacted>" {
		t.Errorf("endpoint %s", got)
	}
}
