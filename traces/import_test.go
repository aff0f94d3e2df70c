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
