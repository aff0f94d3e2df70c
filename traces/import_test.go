package traces

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func importFile(t *testing.T, format, file string, opts ImportOptions) ([]Request, error) {
	t.Helper()
	f, err := os.Open("testdata/import/" + file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return Import(format, f, file, opts)
}

type brief struct {
	ID      string
	At      time.Duration
	In, Out int
	Class   string
	Session string
	Turn    int
}

func briefs(reqs []Request) []brief {
	var out []brief
	for _, r := range reqs {
		out = append(out, brief{r.ID, r.Arrival, r.InputTokens, r.OutputTokens, r.Class, r.Session, r.Turn})
	}
	return out
}

func wantErr(t *testing.T, err error, prefix string, line int) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", prefix)
	}
	if !strings.HasPrefix(err.Error(), prefix) {
		t.Fatalf("error\n  %v\nwant prefix\n  %s", err, prefix)
	}
	var le *LineError
	if !errors.As(err, &le) || le.Line != line {
		t.Fatalf("error %v: want a *LineError on line %d", err, line)
	}
}

func TestImportAzure(t *testing.T) {
	_, err := importFile(t, "azure", "azure2023.csv", ImportOptions{})
	wantErr(t, err, "azure2023.csv:4: GeneratedTokens: is 0: the row records a failed request (import with --drop-failed", 4)

	var skipped []string
	got, err := importFile(t, "azure", "azure2023.csv", ImportOptions{DropFailed: true, Class: "conversation",
		OnSkip: func(line int, why string) { skipped = append(skipped, fmt.Sprint(line, ": ", why)) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []brief{
		{"r5", 0, 2048, 12, "conversation", "", 0},
		{"r2", 500 * time.Millisecond, 374, 44, "conversation", "", 0},
		{"r3", 4814579 * time.Microsecond, 396, 109, "conversation", "", 0},
	}
	if !reflect.DeepEqual(briefs(got), want) {
		t.Fatalf("got %+v\nwant %+v", briefs(got), want)
	}
	if !reflect.DeepEqual(skipped, []string{"4: GeneratedTokens is 0 (a failed request)"}) {
		t.Fatalf("skipped %q", skipped)
	}

	got, err = importFile(t, "azure", "azure2024.csv", ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = []brief{{"r2", 0, 1631, 3, "", "", 0}, {"r3", 1500 * time.Millisecond, 4420, 215, "", "", 0}}
	if !reflect.DeepEqual(briefs(got), want) {
		t.Fatalf("2024: got %+v", briefs(got))
	}

	_, err = importFile(t, "azure", "azure_bad.csv", ImportOptions{})
	wantErr(t, err, `azure_bad.csv:3: ContextTokens: must be an integer >= 1 (got "12x") (or import with --skip-bad`, 3)
	skipped = nil
	got, err = importFile(t, "azure", "azure_bad.csv", ImportOptions{SkipBad: true,
		OnSkip: func(line int, why string) { skipped = append(skipped, fmt.Sprint(line)) }})
	if err != nil || len(got) != 1 || !reflect.DeepEqual(skipped, []string{"3", "4", "5"}) {
		t.Fatalf("skip-bad: %v %+v skipped %v", err, briefs(got), skipped)
	}

	_, err = Import("azure", strings.NewReader("Time,Tokens\n1,2\n"), "x.csv", ImportOptions{})
	wantErr(t, err, `x.csv:1: header: missing column "TIMESTAMP" (found Time, Tokens); is this the right --format?`, 1)
}

func TestImportBurstGPT(t *testing.T) {
	_, err := importFile(t, "burstgpt", "burstgpt_v1.csv", ImportOptions{})
	wantErr(t, err, "burstgpt_v1.csv:3: Response tokens: is 0", 3)

	got, err := importFile(t, "burstgpt", "burstgpt_v1.csv", ImportOptions{DropFailed: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []brief{
		{"r2", 0, 472, 18, "conversation", "", 0},
		{"r4", 41500 * time.Millisecond, 417, 276, "api", "", 0},
		{"r5", 113 * time.Second, 2204, 431, "api", "", 0},
	}
	if !reflect.DeepEqual(briefs(got), want) {
		t.Fatalf("got %+v", briefs(got))
	}
	got, err = importFile(t, "burstgpt", "burstgpt_v1.csv", ImportOptions{DropFailed: true, Model: "chatgpt", Class: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	want = []brief{{"r2", 0, 472, 18, "chat", "", 0}, {"r5", 113 * time.Second, 2204, 431, "chat", "", 0}}
	if !reflect.DeepEqual(briefs(got), want) {
		t.Fatalf("model filter: got %+v", briefs(got))
	}
	got, _ = importFile(t, "burstgpt", "burstgpt_v1.csv", ImportOptions{DropFailed: true, Limit: 2})
	if len(got) != 2 {
		t.Fatalf("limit 2 gave %d", len(got))
	}

	got, err = importFile(t, "burstgpt", "burstgpt_v2.csv", ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = []brief{
		{"r2", 0, 120, 300, "conversation", "884", 1},
		{"r3", 5250 * time.Millisecond, 64, 20, "conversation", "885", 1},
		{"r4", 29750 * time.Millisecond, 560, 150, "conversation", "884", 2},
		{"r5", 30750 * time.Millisecond, 33, 12, "api", "", 0},
	}
	if !reflect.DeepEqual(briefs(got), want) {
		t.Fatalf("v2: got %+v", briefs(got))
	}

	_, err = importFile(t, "burstgpt", "burstgpt_bad.csv", ImportOptions{})
	wantErr(t, err, `burstgpt_bad.csv:3: Timestamp: must be a number of seconds (got "soon")`, 3)
	var skipped []string
	got, err = importFile(t, "burstgpt", "burstgpt_bad.csv", ImportOptions{SkipBad: true,
		OnSkip: func(line int, why string) { skipped = append(skipped, fmt.Sprint(line, ": ", why)) }})
	if err != nil || len(got) != 1 || len(skipped) != 3 {
		t.Fatalf("skip-bad: %v %+v skipped %q", err, briefs(got), skipped)
	}
	if !strings.HasPrefix(skipped[1], "4: Request tokens") || !strings.HasPrefix(skipped[2], "5: csv:") {
		t.Fatalf("skipped %q", skipped)
	}
	if _, err := importFile(t, "azure", "azure2023.csv", ImportOptions{Model: "x"}); err == nil {
		t.Fatal("model filter accepted for azure")
	}
}

func TestImportMooncake(t *testing.T) {
	_, err := importFile(t, "mooncake", "mooncake.jsonl", ImportOptions{})
	wantErr(t, err, "mooncake.jsonl:4: output_length: is 0", 4)
	got, err := importFile(t, "mooncake", "mooncake.jsonl", ImportOptions{DropFailed: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []brief{
		{"r1", 0, 6955, 52, "", "", 0},
		{"r2", 3053 * time.Millisecond, 6472, 26, "", "", 0},
		{"r5", 5518500 * time.Microsecond, 1, 3, "", "", 0},
	}
	if !reflect.DeepEqual(briefs(got), want) {
		t.Fatalf("got %+v", briefs(got))
	}
	if len(got[0].HashIDs) != 14 || got[0].HashIDs[13] != 59 || got[1].HashIDs[12] != 60 || got[2].HashIDs != nil {
		t.Fatalf("hash ids %v %v %v", got[0].HashIDs, got[1].HashIDs, got[2].HashIDs)
	}
	// The two requests share 12 full 512-token blocks.
	if s := ComputeStats(got); s.PrefixReuseTokens != 12*512 {
		t.Fatalf("prefix reuse %d", s.PrefixReuseTokens)
	}

	_, err = importFile(t, "mooncake", "mooncake_bad.jsonl", ImportOptions{})
	wantErr(t, err, "mooncake_bad.jsonl:2: input_length: must be an integer >= 1 (got 0)", 2)
	var skipped []string
	got, err = importFile(t, "mooncake", "mooncake_bad.jsonl", ImportOptions{SkipBad: true,
		OnSkip: func(line int, why string) { skipped = append(skipped, fmt.Sprint(line, ": ", why)) }})
	if err != nil || len(got) != 1 {
		t.Fatalf("skip-bad: %v %+v", err, got)
	}
	wantSkips := []string{"2: input_length", "3: input_length: missing", "4: hash_ids[1]", "5: : invalid JSON",
		"6: timestamp", "7: : the last line is cut short"}
	if len(skipped) != len(wantSkips) {
		t.Fatalf("skipped %q", skipped)
	}
	for i, w := range wantSkips {
		if !strings.HasPrefix(skipped[i], w) {
			t.Fatalf("skip %d = %q, want prefix %q", i, skipped[i], w)
		}
	}
}

func TestImportShareGPT(t *testing.T) {
	_, err := importFile(t, "sharegpt", "sharegpt.json", ImportOptions{})
	wantErr(t, err, "sharegpt.json:20: conversations: has the wrong type", 20)

	var skipped []int
	onSkip := func(line int, why string) { skipped = append(skipped, line) }
	got, err := importFile(t, "sharegpt", "sharegpt.json", ImportOptions{SkipBad: true, Rate: 2, OnSkip: onSkip})
	if err != nil {
		t.Fatal(err)
	}
	want := []brief{{"c1", 0, 11, 14, "", "", 0}, {"c2", 500 * time.Millisecond, 2, 2, "", "", 0}}
	if !reflect.DeepEqual(briefs(got), want) {
		t.Fatalf("got %+v", briefs(got))
	}
	if got[0].Prompt != "Summarize the plot of a heist film in three sentences." || got[0].Messages != nil {
		t.Fatalf("prompt %q", got[0].Prompt)
	}
	if !reflect.DeepEqual(skipped, []int{11, 20, 21}) {
		t.Fatalf("skipped lines %v", skipped)
	}

	got, err = importFile(t, "sharegpt", "sharegpt.json", ImportOptions{SkipBad: true, Sessions: true, Think: 3 * time.Second, Class: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	want = []brief{
		{"c1-t1", 0, 11, 14, "chat", "c1", 1},
		{"c2-t1", time.Second, 6, 2, "chat", "c2", 1},
		{"c1-t2", 3 * time.Second, 30, 7, "chat", "c1", 2},
	}
	if !reflect.DeepEqual(briefs(got), want) {
		t.Fatalf("sessions: got %+v", briefs(got))
	}
	if len(got[2].Messages) != 3 || got[2].Messages[1].Role != "assistant" || got[2].Think != 3*time.Second {
		t.Fatalf("turn 2 %+v", got[2])
	}
	if got[1].Messages[0].Role != "system" {
		t.Fatalf("system message lost: %+v", got[1].Messages)
	}

	a, _ := importFile(t, "sharegpt", "sharegpt.json", ImportOptions{SkipBad: true, Poisson: true, Seed: 3, Rate: 10})
	b, _ := importFile(t, "sharegpt", "sharegpt.json", ImportOptions{SkipBad: true, Poisson: true, Seed: 3, Rate: 10})
	if !reflect.DeepEqual(a, b) || a[1].Arrival == 100*time.Millisecond {
		t.Fatalf("poisson arrivals not seeded: %v %v", a[1].Arrival, b[1].Arrival)
	}

	_, err = Import("sharegpt", strings.NewReader(`{"a":1}`), "s.json", ImportOptions{})
	wantErr(t, err, "s.json:1: a ShareGPT file must be a JSON array", 1)
	_, err = Import("sharegpt", strings.NewReader("[\n{\"conversations\": [\n"), "s.json", ImportOptions{})
	wantErr(t, err, "s.json:3: invalid JSON", 3)
}

func TestImportOwnFormats(t *testing.T) {
	got, err := Import("jsonl", strings.NewReader(`{"arrival_s":1,"input_tokens":2,"output_tokens":3,"x":1}`+"\n"+`{"arrival_s":0,"input_tokens":2,"output_tokens":3}`), "t.jsonl",
		ImportOptions{Lenient: true, Limit: 1})
	if err != nil || len(got) != 1 || got[0].ID != "r2" {
		t.Fatalf("%v %+v", err, got)
	}
	if _, err := Import("csv", strings.NewReader(""), "x", ImportOptions{}); err == nil || !strings.Contains(err.Error(), "azure, burstgpt") {
		t.Fatalf("unknown format: %v", err)
	}
}

// agenticBrief is what the agentic importers set on a request.
type agenticBrief struct {
	ID      string
	Arrival time.Duration
	Session string
	Turn    int
	After   []int
	Think   time.Duration
	Tool    time.Duration
}

func agenticBriefs(reqs []Request) []agenticBrief {
	out := make([]agenticBrief, len(reqs))
	for i, r := range reqs {
		out[i] = agenticBrief{r.ID, r.Arrival, r.Session, r.Turn, r.After, r.Think, r.ToolDelay}
	}
	return out
}

// TestImportToolAgent imports rows in the Mooncake FAST'25 trace format (the release's
// README: timestamp in ms, input_length, output_length, hash_ids of 512-token blocks) and
// checks the sessions rebuilt from the hash_ids chains: continuation needs every full block of
// the earlier request and room for its prompt and reply, the most specific match wins (line 9
// continues line 6, whose partial block it shares, not line 1 or 7), an earlier request
// continued twice fans out (lines 1 and 2), a request too short to hold its candidate's reply
// starts a session (line 5), and the tool delay is the gap less output × 30 ms.
func TestImportToolAgent(t *testing.T) {
	_, err := importFile(t, "toolagent", "toolagent.jsonl", ImportOptions{})
	wantErr(t, err, "toolagent.jsonl:8: output_length: is 0", 8)
	got, err := importFile(t, "toolagent", "toolagent.jsonl", ImportOptions{DropFailed: true})
	if err != nil {
		t.Fatal(err)
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	want := []agenticBrief{
		{"r1", 0, "a1", 1, nil, 0, 0},
		{"r2", ms(1000), "a2", 1, nil, 0, 0},
		{"r3", ms(3000), "a2", 2, []int{1}, 0, ms(3000 - 1000 - 10*30)},
		{"r4", ms(3500), "a2", 3, []int{1}, 0, ms(3500 - 1000 - 10*30)},
		{"r5", ms(4000), "a3", 1, nil, 0, 0},
		{"r6", ms(5000), "a1", 2, []int{1}, 0, ms(5000 - 40*30)},
		{"r7", ms(5200), "a1", 3, []int{1}, 0, ms(5200 - 40*30)},
		{"r9", ms(9000), "a1", 4, []int{2}, 0, ms(9000 - 5000 - 30*30)},
	}
	if b := agenticBriefs(got); !reflect.DeepEqual(b, want) {
		t.Fatalf("got  %+v\nwant %+v", b, want)
	}
	st := ComputeStats(got)
	if st.Sessions != 3 || st.Agentic == nil || st.Agentic.FanOutTurns != 2 || st.Agentic.JoinTurns != 0 || st.Agentic.ToolDelayMs.Count != 5 {
		t.Fatalf("stats %+v %+v", st, st.Agentic)
	}
	// A slower engine estimate leaves less for the tools, floored at 0.
	got, err = importFile(t, "toolagent", "toolagent.jsonl", ImportOptions{DropFailed: true, TPOT: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got[2].ToolDelay != 0 || got[3].ToolDelay != ms(3500-1000-10*200) {
		t.Fatalf("tool delays %v %v", got[2].ToolDelay, got[3].ToolDelay)
	}
}

// TestImportWeka imports two conversations in the Weka / kv-cache-tester trace format
// (kv-cache-tester docs/trace_replay_tester.md "Trace Format"; the fields and the two nested
// timestamp conventions as AIPerf's Weka loader documents them): sub-agents fan out from the
// call before their marker, the parent's next call joins those that do not run in the
// background, nested sub-agents nest, and the waits come from think_time, else from the gap
// after the latest dependency's api_time (or out × 30 ms), as tool delays after a tool call.
func TestImportWeka(t *testing.T) {
	var blocks int
	got, err := importFile(t, "weka", "weka.jsonl", ImportOptions{OnBlockTokens: func(n int) { blocks = n }})
	if err != nil {
		t.Fatal(err)
	}
	if blocks != 64 {
		t.Fatalf("block size reported %d", blocks)
	}
	s, ms := time.Second, time.Millisecond
	byID := map[string]agenticBrief{}
	for _, b := range agenticBriefs(got) {
		byID[b.ID] = b
	}
	want := []agenticBrief{
		// Absolute nested timestamps; a sub-agent first: its first call waits for none.
		{"trace_abs.requests[0].requests[0]", 5 * s, "trace_abs", 1, []int{}, 0, 0},
		{"trace_abs.requests[0].requests[1].requests[0]", 6500 * ms, "trace_abs", 2, []int{1}, 0, 1200 * ms},
		{"trace_abs.requests[0].requests[2]", 8 * s, "trace_abs", 3, []int{1, 2}, 0, 1350 * ms},
		{"trace_abs.requests[1]", 10 * s, "trace_abs", 4, []int{3}, 1700 * ms, 0},
		// Relative nested timestamps (every sub-agent call is earlier than its marker).
		{"trace_demo.requests[0]", 0, "trace_demo", 1, []int{}, 0, 0},
		{"trace_demo.requests[1]", 15 * s, "trace_demo", 2, []int{1}, 0, 0},
		{"trace_demo.requests[2].requests[0]", 20500 * ms, "trace_demo", 3, []int{2}, 0, 0},
		{"trace_demo.requests[2].requests[1]", 24 * s, "trace_demo", 4, []int{3}, 0, 400 * ms},
		{"trace_demo.requests[3].requests[0]", 21500 * ms, "trace_demo", 5, []int{2}, 0, 0},
		{"trace_demo.requests[4].requests[0]", 22 * s, "trace_demo", 6, []int{2}, 0, 0},
		{"trace_demo.requests[5]", 40 * s, "trace_demo", 7, []int{2, 4, 5}, 0, 40*s - (15*s + 771*30*ms)},
		{"trace_demo.requests[6]", 95 * s, "trace_demo", 8, []int{7}, 12500 * ms, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("%d requests: %+v", len(got), agenticBriefs(got))
	}
	for _, w := range want {
		if g := byID[w.ID]; !reflect.DeepEqual(g, w) {
			t.Errorf("got  %+v\nwant %+v", g, w)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i].Arrival < got[i-1].Arrival {
			t.Fatal("not sorted by arrival")
		}
	}
	// Local hash ids are the conversation's own: the second's are moved past the first's.
	for _, q := range got {
		if q.ID == "trace_demo.requests[0]" && q.HashIDs[0] != 1+1<<40 {
			t.Fatalf("local hash ids %v", q.HashIDs)
		}
		if q.ID == "trace_abs.requests[1]" && q.HashIDs[2] != 3 {
			t.Fatalf("global hash ids %v", q.HashIDs)
		}
	}
	st := ComputeStats(got)
	if st.Agentic == nil || st.Agentic.JoinTurns != 2 || st.Agentic.FanOutTurns != 2 || st.Sessions != 2 {
		t.Fatalf("stats %+v", st.Agentic)
	}

	_, err = importFile(t, "weka", "weka_bad.json", ImportOptions{})
	wantErr(t, err, "weka_bad.json:8: requests[1].in: must be an integer >= 1 (got 0)", 8)
	var skipped []string
	got, err = importFile(t, "weka", "weka_bad.json", ImportOptions{SkipBad: true, DropFailed: true,
		OnSkip: func(line int, why string) { skipped = append(skipped, fmt.Sprint(line, ": ", why)) }})
	if err != nil {
		t.Fatal(err)
	}
	wantSkips := []string{"8: requests[1].in", "9: requests[2].type", "10: requests[3].t: missing", "11: requests[4].out is 0", "12: requests[5].hash_ids[1]"}
	if len(skipped) != len(wantSkips) {
		t.Fatalf("skipped %q", skipped)
	}
	for i, w := range wantSkips {
		if !strings.HasPrefix(skipped[i], w) {
			t.Fatalf("skip %d = %q, want prefix %q", i, skipped[i], w)
		}
	}
	if b := agenticBriefs(got); len(b) != 2 || !reflect.DeepEqual(b[1].After, []int{1}) {
		t.Fatalf("after skipping: %+v", b)
	}
	for _, bad := range []struct{ in, want string }{
		{`[1]`, "x.json:1: each conversation must be a JSON object"},
		{`{"id":"a","requests":[{"t":0,"type":"n","in":1,"out":1}]} {"id":"b"}`, "x.json:1: requests: missing"},
		{`{"id":"a","block_size":64,"requests":[]}` + "\n" + `{"id":"b","block_size":16,"requests":[]}`, "x.json:2: block_size: 16 differs"},
		{`{"id":"a","hash_id_scope":"x","requests":[]}`, `x.json:1: hash_id_scope: must be "local" or "global"`},
		{"{\"id\":\"a\",\n\"requests\":[", "x.json:2: the file ends inside a JSON value"},
		{`{"id":"a","requests":` + strings.Repeat(`[{"t":0,"type":"subagent","requests":`, 70) + `[]` + strings.Repeat(`}]`, 70) + `}`, "x.json:1: requests: sub-agents nested more than 64 deep"},
	} {
		_, err := Import("weka", strings.NewReader(bad.in), "x.json", ImportOptions{})
		if err == nil || !strings.HasPrefix(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.in, err, bad.want)
		}
	}
}
