package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
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
			fmt.Fprintf(&b, `{"id":"t%d",%s,"class":"tools","input_tokens":20,"output_tokens":64,"messages":[{"role":"user","content":"Call get_weather for this city.\n- city: Paris\n"}],"tools":%s,"expect":[{"kind":"tool_call","name":"get_weather","arguments":{"city":"Paris"}}]}`+"\n", i, at, tools)
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

// answerOf is what the judge saw of a record (runner's answerText).
func answerOf(r *metrics.Record) string {
	s := r.OutputText
	for _, c := range r.ToolCalls {
		if s != "" {
			s += "\n"
		}
		s += "tool call: " + c.Name + "(" + c.Arguments + ")"
	}
	return s
}

// TestJudgeAgainstServe: `serve` acting as judge (its deterministic verdict mode) grades a
// run's kept answers after the run: the verdicts follow the documented rule, the cost is
// counted, and judge-calibrate reports agreement with labels.
func TestJudgeAgainstServe(t *testing.T) {
	judgeURL := startServe(t, "--time-scale", "100")
	const n = 12
	tr := qualityTrace(t, n)
	rubric := filepath.Join(t.TempDir(), "rubric.txt")
	os.WriteFile(rubric, []byte(`The answer must name the field "order_id".`), 0o644)
	dir := t.TempDir()
	app := newTestApp(nil)
	if code := app.cli("run", "--trace", tr, "--out", dir, "--time-scale", "50", "--no-progress",
		"--judge-endpoint", judgeURL, "--judge-model", "m", "--judge-rubric", rubric, "--judge-concurrency", "3"); code != 0 {
		t.Fatalf("exit %d\n%s", code, app.err.String())
	}
	recs, err := metrics.ReadRecords(filepath.Join(dir, "requests.msgpack"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for i := range recs {
		if recs[i].OK() && answerOf(&recs[i]) != "" {
			want[recs[i].ID] = strings.Contains(answerOf(&recs[i]), "order_id")
		}
	}
	vs, err := runner.ReadVerdicts(dir)
	if err != nil {
		t.Fatal(err)
	}
	passes := 0
	for _, v := range vs {
		if v.Err != "" || v.Pass != want[v.ID] || v.Reasoning == "" {
			t.Errorf("verdict %+v, want pass=%v", v, want[v.ID])
		}
		if v.Pass {
			passes++
		}
	}
	j := readQuality(t, dir).Judge
	if len(vs) != len(want) || j == nil || j.Judged != len(want) || j.Calls != len(want) || j.Passed != passes || passes == 0 || passes == len(want) ||
		j.PromptTokens <= 0 || j.CompletionTokens <= 0 || j.Mode != "rubric" {
		t.Fatalf("judge %+v over %d kept answers (%d verdicts)", j, len(want), len(vs))
	}
	if !strings.Contains(app.out.String(), "Judge") || !strings.Contains(app.out.String(), "completion tokens") {
		t.Errorf("no judge line in the terminal table:\n%s", app.out.String())
	}

	// Labels that agree except on two answers (one false pass, one false fail).
	var lb strings.Builder
	flippedPass, flippedFail := false, false
	for _, v := range vs {
		label := v.Pass
		if v.Pass && !flippedPass {
			label, flippedPass = false, true
		} else if !v.Pass && !flippedFail {
			label, flippedFail = true, true
		}
		fmt.Fprintf(&lb, "{\"id\":%q,\"label\":%v}\n", v.ID, label)
	}
	labels := filepath.Join(t.TempDir(), "labels.jsonl")
	os.WriteFile(labels, []byte(lb.String()), 0o644)
	app = newTestApp(nil)
	if code := app.cli("judge-calibrate", "--labels", labels, dir); code != 0 {
		t.Fatalf("judge-calibrate: exit %d\n%s", code, app.err.String())
	}
	acc := fmt.Sprintf("accuracy   %.1f%% (%d agree)", float64(len(vs)-2)/float64(len(vs))*100, len(vs)-2)
	if out := app.out.String(); !strings.Contains(out, acc) || !strings.Contains(out, "judge pass/human fail 1 · judge fail/human pass 1") {
		t.Errorf("judge-calibrate output:\n%s\nwant %s", out, acc)
	}
	// A judge that answers nothing fails the command, after the measured results are shown.
	app = newTestApp(nil)
	dead := t.TempDir()
	if code := app.cli("run", "--trace", tr, "--out", dead, "--time-scale", "50", "--no-progress", "--judge-endpoint", closedPort(t), "--judge-model", "m"); code != exitBadInput ||
		!strings.Contains(app.err.String(), "the judge gave no verdict on any of the") || !strings.Contains(app.out.String(), "Quality") {
		t.Errorf("a dead judge: exit %d\n%s\n%s", code, app.out.String(), app.err.String())
	}
	app = newTestApp(nil)
	if code := app.cli("run", "--trace", tr, "--judge-model", "m"); code == 0 || !strings.Contains(app.err.String(), "--judge-model needs --judge-endpoint") {
		t.Errorf("a judge flag without an endpoint: exit %d, %s", code, app.err.String())
	}
}

// TestABPairedQualityAndPairwiseJudge: an ab whose B arm spoils most JSON outputs shows the
// quality drop paired by request with an interval below zero, fails --fail-on
// 'quality<-1pp', and the pairwise judge (serve) asks every pair twice, order swapped,
// counting a pair only when both orders agree.
func TestABPairedQualityAndPairwiseJudge(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an A/B experiment")
	}
	judgeURL := startServe(t, "--time-scale", "100")
	tr := qualityTrace(t, 45)
	out := t.TempDir()
	app := newTestApp(nil)
	code := app.cli("ab", "--trace", tr, "--out", out, "--time-scale", "50", "--no-progress", "--warmup-requests", "0",
		"--a-engine", "quality=off", "--b-engine", "quality=json=70%", "--fail-on", "quality<-1pp",
		"--judge-endpoint", judgeURL, "--judge-model", "m")
	if code != exitRegression {
		t.Fatalf("exit %d, want %d (a quality regression)\n%s\n%s", code, exitRegression, app.out.String(), app.err.String())
	}
	data, err := os.ReadFile(filepath.Join(out, "ab.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res runner.ABResult
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	c := res.Comparison
	var row *metrics.MetricDelta
	for i := range c.Metrics {
		if c.Metrics[i].Name == "quality.pass_rate" {
			row = &c.Metrics[i]
		}
	}
	if row == nil || c.Quality == nil || row.Method != metrics.MethodPairedBootstrap || row.CIHigh >= 0 || row.Verdict != metrics.VerdictRegressed ||
		c.Quality.Paired != 45 || c.Quality.BaseRate != 1 || c.Quality.BaseOnly == 0 || c.Quality.CandOnly != 0 {
		t.Fatalf("quality row %+v, paired %+v", row, c.Quality)
	}
	if html, _ := os.ReadFile(filepath.Join(out, "comparison.html")); !strings.Contains(string(html), "Quality (paired)") || !strings.Contains(string(html), "LLM judge: pairwise") {
		t.Error("comparison.html has no paired quality section")
	}
	if !strings.Contains(app.out.String(), "quality") || !strings.Contains(app.out.String(), "paired bootstrap CI") {
		t.Errorf("no paired quality line:\n%s", app.out.String())
	}
	// The pairwise judge: the engine's rule is the longer answer, and the first shown when
	// both are equally long (a position bias), so a pair is consistent unless its answers
	// differ at equal length.
	j := c.Judge
	if j == nil || j.Mode != "pairwise" || j.Calls != 2*j.Judged || j.WinsA+j.WinsB+j.Ties+j.Inconsistent+j.Errors != j.Judged || j.Errors != 0 {
		t.Fatalf("judge %+v", j)
	}
	answers := func(dir string) map[string]string {
		recs, err := metrics.ReadRecords(filepath.Join(dir, "requests.msgpack"))
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for i := range recs {
			if recs[i].OK() {
				m[recs[i].ID] = strings.TrimSpace(answerOf(&recs[i]))
			}
		}
		return m
	}
	a, b := answers(res.Dirs["A"][0]), answers(res.Dirs["B"][0])
	f, err := os.ReadFile(filepath.Join(out, runner.PairJudgeFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(f)), "\n")
	inconsistent := 0
	for _, line := range lines {
		var pv struct {
			ID         string `json:"id"`
			Consistent bool   `json:"consistent"`
			Winner     string `json:"winner"`
		}
		if err := json.Unmarshal([]byte(line), &pv); err != nil {
			t.Fatal(err)
		}
		x, y := a[pv.ID], b[pv.ID]
		want := ""
		switch {
		case len(x) > len(y):
			want = "A"
		case len(y) > len(x):
			want = "B"
		case x == y:
			want = "tie"
		}
		if pv.Winner != want || pv.Consistent != (want != "") {
			t.Errorf("pair %s: %+v; answers %q / %q", pv.ID, pv, x, y)
		}
		if !pv.Consistent {
			inconsistent++
		}
	}
	if len(lines) != j.Judged || inconsistent != j.Inconsistent || j.Ties == 0 {
		t.Errorf("%d verdict lines, %d inconsistent; summary %+v", len(lines), inconsistent, j)
	}
	// compare of two of the runs gates on the same paired quality.
	app = newTestApp(nil)
	if code := app.cli("compare", res.Dirs["A"][0], res.Dirs["B"][0], "--fail-on", "quality<-1pp"); code != exitRegression {
		t.Errorf("compare: exit %d, want %d\n%s%s", code, exitRegression, app.out.String(), app.err.String())
	}
	app = newTestApp(nil)
	if code := app.cli("compare", res.Dirs["A"][0], res.Dirs["A"][1], "--fail-on", "quality<-1pp"); code != exitOK {
		t.Errorf("compare A with A: exit %d\n%s%s", code, app.out.String(), app.err.String())
	}
}

// TestSweepQualityByLoad: sweep reports the pass rate at each load level.
func TestSweepQualityByLoad(t *testing.T) {
	tr := qualityTrace(t, 12)
	out := t.TempDir()
	app := newTestApp(nil)
	if code := app.cli("sweep", "--trace", tr, "--slo", "ttft=5s", "--simulate", "--points", "5,50", "--out", out); code != 0 {
		t.Fatalf("exit %d\n%s", code, app.err.String())
	}
	if !strings.Contains(app.out.String(), "quality %") {
		t.Errorf("no quality column:\n%s", app.out.String())
	}
	data, err := os.ReadFile(filepath.Join(out, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Points []metrics.SweepPoint `json:"points"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 2 {
		t.Fatalf("%d points", len(res.Points))
	}
	for _, p := range res.Points {
		if p.Quality == nil || p.Quality.Graded < 12 || p.Quality.Graded%12 != 0 { // sweep repeats the trace to fill its window
			t.Errorf("point %v: quality %+v", p.Rate, p.Quality)
		}
	}
}

// closedPort is the URL of a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	return url
}
