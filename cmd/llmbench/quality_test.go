package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/runner"
)

// qualityTrace writes a trace of n graded requests: structured JSON outputs (checked by
// schema and value), tool calls, and completions checked by regex and token budget.
func qualityTrace(t *testing.T, n int) string {
	t.Helper()
	const schema = `{"type":"object","properties":{"order_id":{"type":"integer"},"customer":{"type":"string"}},"required":["order_id","customer"],"additionalProperties":false}`
	const tools = `[{"type":"function","function":{"name":"get_weather","description":"Get the weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
	var b strings.Builder
	for i := 0; i < n; i++ {
		at := fmt.Sprintf(`"arrival_s":%g`, float64(i)*0.05)
		switch i % 3 {
		case 0:
			content := fmt.Sprintf("Extract the order as JSON.\\n- order id: %d\\n- customer: Ada %d\\n", 4700+i, i)
			fmt.Fprintf(&b, `{"id":"j%d",%s,"class":"json","input_tokens":30,"output_tokens":64,"messages":[{"role":"user","content":"%s"}],"response_format":{"type":"json_schema","json_schema":{"name":"order","schema":%s}},"expect":[{"kind":"json_schema","schema":%s},{"kind":"contains","values":["%d"]}]}`+"\n",
				i, at, content, schema, schema, 4700+i)
		case 1:
			fmt.Fprintf(&b, `{"id":"t%d",%s,"class":"tools","input_tokens":20,"output_tokens":64,"messages":[{"role":"user","content":"Call get_weather for this city.\\n- city: Paris\\n"}],"tools":%s,"expect":[{"kind":"tool_call","name":"get_weather","arguments":{"city":"Paris"}}]}`+"\n", i, at, tools)
		default:
			fmt.Fprintf(&b, `{"id":"c%d",%s,"class":"text","input_tokens":8,"output_tokens":12,"prompt":"Say something %d.","expect":[{"kind":"regex","pattern":"\\S"},{"kind":"max_tokens_used","value":12}]}`+"\n", i, at, i)
		}
	}
	path := filepath.Join(t.TempDir(), "quality.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readQuality(t *testing.T, dir string) *metrics.Quality {
	t.Helper()
	sum, err := runner.ReadSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Quality == nil {
		t.Fatalf("%s: no quality block", dir)
	}
	return sum.Quality
}

// startServe runs `llmbench serve` with args on a loopback port and returns its URL.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	pr, pw := io.Pipe()
	app := &App{Stdout: pw, Stderr: io.Discard, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() {
		code <- execute(ctx, app, append([]string{"serve", "--addr", "127.0.0.1:0", "--served-model-name", "m"}, args...))
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	url := ""
	for url == "" && sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), "listening on "); ok {
			url, _, _ = strings.Cut(rest, " ")
		}
	}
	go io.Copy(io.Discard, pr)
	t.Cleanup(func() {
		cancel()
		<-code
	})
	if url == "" {
		t.Fatal("serve printed no URL")
	}
	return url
}

// TestRunGradesAndGradeRegrades: a run of graded requests on the embedded engine writes a
// quality block whose counts add up, `grade DIR` re-grades it offline to the same numbers, and
// grading with edited checks changes them.
func TestRunGradesAndGradeRegrades(t *testing.T) {
	const n = 30
	tr := qualityTrace(t, n)
	dir := t.TempDir()
	app := newTestApp(nil)
	if code := app.cli("run", "--trace", tr, "--out", dir, "--time-scale", "50", "--no-progress"); code != 0 {
		t.Fatalf("exit %d\n%s", code, app.err.String())
	}
	q := readQuality(t, dir)
	failed := 0
	for _, v := range q.Failures {
		failed += v
	}
	if q.Graded != n || q.Passed+failed != n || q.Passed == 0 || len(q.ByClass) != 3 || q.ByClass["tools"].Graded != n/3 {
		t.Fatalf("quality %+v", q)
	}
	if !strings.Contains(app.out.String(), "Quality") || !strings.Contains(app.out.String(), "graded)") {
		t.Errorf("the terminal table has no quality line:\n%s", app.out.String())
	}
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if !strings.Contains(string(html), "Quality under load") {
		t.Error("report.html has no quality section")
	}
	recs, err := metrics.ReadRecords(filepath.Join(dir, "requests.msgpack"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Grade == "" || (r.OK() && r.OutputText == "" && len(r.ToolCalls) == 0) {
			t.Errorf("record %s: grade %q, text %q, calls %v", r.ID, r.Grade, r.OutputText, r.ToolCalls)
		}
	}

	app = newTestApp(nil)
	if code := app.cli("grade", dir); code != 0 {
		t.Fatalf("grade: exit %d\n%s", code, app.err.String())
	}
	if !strings.Contains(app.out.String(), fmt.Sprintf("graded %d requests (0 grades changed)", n)) {
		t.Errorf("grade output:\n%s", app.out.String())
	}
	if again := readQuality(t, dir); !reflect.DeepEqual(again, q) {
		t.Errorf("grade DIR changed the numbers:\n got %+v\nwant %+v", again, q)
	}

	// The same answers under a stricter check: every text request now fails.
	data, _ := os.ReadFile(tr)
	strict := filepath.Join(t.TempDir(), "strict.jsonl")
	os.WriteFile(strict, []byte(strings.ReplaceAll(string(data), `{"kind":"regex","pattern":"\\S"}`, `{"kind":"contains","values":["never-said"]}`)), 0o644)
	app = newTestApp(nil)
	if code := app.cli("grade", dir, "--trace", strict); code != 0 {
		t.Fatalf("grade --trace: exit %d\n%s", code, app.err.String())
	}
	if s := readQuality(t, dir); s.ByClass["text"].Passed != 0 || s.ByClass["text"].Failures[metrics.GradeCheck] != n/3 || !reflect.DeepEqual(s.ByClass["json"], q.ByClass["json"]) {
		t.Errorf("strict regrade: %+v", s.ByClass)
	}
	app = newTestApp(nil)
	if code := app.cli("grade", dir, "--trace", chatSmall); code == 0 || !strings.Contains(app.err.String(), "replayed another trace") {
		t.Errorf("grade with another trace: exit %d, %s", code, app.err.String())
	}
}

// TestQualityOverEveryWire: against `serve` with each wire personality (streamed, and once
// not), the checks run on the server's real outputs and give the embedded run's grades.
func TestQualityOverEveryWire(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server per wire personality")
	}
	const n = 12
	tr := qualityTrace(t, n)
	grades := func(dir string) map[string]string {
		recs, err := metrics.ReadRecords(filepath.Join(dir, "requests.msgpack"))
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, r := range recs {
			m[r.ID] = r.Grade
		}
		return m
	}
	var want map[string]string
	for _, c := range []struct {
		wire   string
		stream bool
	}{{"vllm", true}, {"sglang", true}, {"llamacpp", true}, {"tgi", true}, {"ollama", true}, {"openai", true}, {"vllm", false}} {
		url := startServe(t, "--time-scale", "50", "--wire", c.wire)
		dir := t.TempDir()
		args := []string{"run", "--trace", tr, "--endpoint", url, "--model", "m", "--out", dir, "--no-progress", "--backend", "vllm"}
		if !c.stream {
			args = append(args, "--no-stream")
		}
		app := newTestApp(nil)
		if code := app.cli(args...); code != 0 {
			t.Fatalf("%s: exit %d\n%s", c.wire, code, app.err.String())
		}
		q := readQuality(t, dir)
		got := grades(dir)
		if q.Graded != n || q.Passed == 0 {
			t.Errorf("%s (stream %v): quality %+v", c.wire, c.stream, q)
		}
		if want == nil {
			want = got
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("%s (stream %v): grades %v, vllm gave %v", c.wire, c.stream, got, want)
		}
	}
}
