package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeJudge answers with reply(userPrompt) and reports usage of 100 prompt and 20 completion
// tokens per call.
func fakeJudge(t *testing.T, reply func(user string) (string, int)) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer k3y" {
			t.Errorf("path %s, auth %q", r.URL.Path, r.Header.Get("Authorization"))
		}
		var body struct {
			Model    string `json:"model"`
			Messages []struct{ Role, Content string }
			Stream   bool `json:"stream"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Model != "judge-m" || body.Stream || len(body.Messages) != 2 {
			t.Errorf("body %+v %v", body, err)
		}
		text, status := reply(body.Messages[1].Content)
		if status != 0 {
			http.Error(w, "overloaded", status)
			return
		}
		b, _ := json.Marshal(text)
		fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":%s}}],"usage":{"prompt_tokens":100,"completion_tokens":20}}`, b)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestParseVerdict(t *testing.T) {
	for _, c := range []struct {
		text, want, reason string
		ok                 bool
	}{
		{"The answer is right.\nVERDICT: PASS", "PASS", "The answer is right.", true},
		{"Reasons.\n\n**Verdict: fail**\n", "FAIL", "Reasons.", true},
		{"verdict:pass", "PASS", "", true},
		{"VERDICT: PASS\nActually, no.", "", "", false},
		{"I think it passes.", "", "", false},
		{"VERDICT: MAYBE", "", "", false},
		{"VERDICT: 2", "", "", false}, // not allowed in rubric mode
	} {
		v, r, err := ParseVerdict(c.text, "PASS", "FAIL")
		if (err == nil) != c.ok || v != c.want || r != c.reason {
			t.Errorf("%q: %q %q %v", c.text, v, r, err)
		}
	}
	if v, _, err := ParseVerdict("x\nVERDICT: TIE", "1", "2", "TIE"); err != nil || v != "TIE" {
		t.Errorf("tie: %q %v", v, err)
	}
}

func TestRubricAgainstAServer(t *testing.T) {
	srv, calls := fakeJudge(t, func(user string) (string, int) {
		if !strings.HasPrefix(user, Marker+" rubric]") || !strings.Contains(user, "Must say \"42\".") {
			t.Errorf("prompt %q", user)
		}
		ans := between(user, "<<<ANSWER\n", "\nANSWER>>>")
		switch {
		case ans == "boom":
			return "", http.StatusServiceUnavailable
		case ans == "rambling":
			return "It is fine, I suppose.", 0
		case strings.Contains(ans, "42"):
			return "It says 42.\nVERDICT: PASS", 0
		}
		return "It does not say 42.\nVERDICT: FAIL", 0
	})
	o := Options{Endpoint: srv.URL, Model: "judge-m", Rubric: `Must say "42".`, APIKey: "k3y", Concurrency: 3}
	items := []Item{{"a", "q?", "it is 42"}, {"b", "q?", "it is 41"}, {"c", "q?", "boom"}, {"d", "q?", "rambling"}, {"e", "q?", "42!"}}
	vs, u := Rubric(context.Background(), o, items)
	if calls.Load() != 5 || u.Calls != 5 || u.PromptTokens != 400 || u.CompletionTokens != 80 {
		t.Errorf("calls %d, usage %+v", calls.Load(), u)
	}
	if !vs[0].Pass || vs[1].Pass || vs[1].Err != "" || !strings.Contains(vs[2].Err, "HTTP 503") || !strings.Contains(vs[3].Err, "no verdict line") || !vs[4].Pass {
		t.Errorf("verdicts %+v", vs)
	}
	s := RubricSummary(o, vs, u)
	if s.Judged != 5 || s.Errors != 2 || s.Passed != 2 || math.Abs(s.PassRate-2.0/3) > 1e-12 || s.Mode != "rubric" {
		t.Errorf("summary %+v", s)
	}
}

// between is the test's reading of the delimiters the prompts use.
func between(text, open, close string) string {
	i := strings.Index(text, open)
	if i < 0 {
		return ""
	}
	rest := text[i+len(open):]
	j := strings.Index(rest, close)
	if j < 0 {
		return ""
	}
	return rest[:j]
}

// TestPairwiseOrderSwap: a judge that prefers the longer answer is consistent in both orders;
// one that always says "1" (pure position bias) is inconsistent on every pair and counts for
// neither side; a tie in both orders is a tie.
func TestPairwiseOrderSwap(t *testing.T) {
	longer := func(user string) (string, int) {
		a, b := between(user, "<<<ANSWER 1\n", "\nANSWER 1>>>"), between(user, "<<<ANSWER 2\n", "\nANSWER 2>>>")
		switch {
		case len(a) > len(b):
			return "1 is longer\nVERDICT: 1", 0
		case len(b) > len(a):
			return "2 is longer\nVERDICT: 2", 0
		}
		return "same\nVERDICT: TIE", 0
	}
	srv, calls := fakeJudge(t, longer)
	o := Options{Endpoint: srv.URL + "/v1", Model: "judge-m", APIKey: "k3y"}
	pairs := []Pair{{"p1", "q", "short", "much longer"}, {"p2", "q", "a longer one", "tiny"}, {"p3", "q", "same", "same"}}
	ps, u := Pairwise(context.Background(), o, pairs)
	if calls.Load() != 6 || u.Calls != 6 {
		t.Fatalf("%d calls for 3 pairs", calls.Load())
	}
	want := []string{WinnerB, WinnerA, Tie}
	for i, p := range ps {
		if !p.Consistent || p.Winner != want[i] {
			t.Errorf("pair %d: %+v, want %s", i, p, want[i])
		}
	}
	s := PairSummary(o, ps, u)
	if s.WinsA != 1 || s.WinsB != 1 || s.Ties != 1 || s.Inconsistent != 0 || s.PreferB != 0 {
		t.Errorf("summary %+v", s)
	}
	biased, _ := fakeJudge(t, func(string) (string, int) { return "The first is better.\nVERDICT: 1", 0 })
	o.Endpoint = biased.URL
	ps, u = Pairwise(context.Background(), o, pairs)
	for _, p := range ps {
		if p.Consistent || p.Winner != "" || p.AFirst != WinnerA || p.BFirst != WinnerB {
			t.Errorf("a position-biased verdict counted: %+v", p)
		}
	}
	if s := PairSummary(o, ps, u); s.Inconsistent != 3 || s.WinsA+s.WinsB+s.Ties != 0 || s.PreferB != 0 {
		t.Errorf("biased summary %+v", s)
	}
}

func TestCalibrate(t *testing.T) {
	labels, err := ReadLabels(strings.NewReader("# human labels\n{\"id\":\"a\",\"label\":\"pass\"}\n{\"id\":\"b\",\"label\":\"fail\"}\n{\"id\":\"c\",\"label\":true}\n\n{\"id\":\"d\",\"label\":\"FAIL\"}\n{\"id\":\"z\",\"label\":\"pass\"}\n"), "l.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	vs := []Verdict{{ID: "a", Pass: true}, {ID: "b", Pass: false}, {ID: "c", Pass: false}, {ID: "d", Pass: true}, {ID: "e", Pass: true}, {ID: "z", Err: "HTTP 500"}}
	a := Calibrate(vs, labels)
	// 4 compared: a, b agree; c, d disagree. po = 0.5; judge passes 2/4, humans 2/4: pe = 0.5.
	if a.Compared != 4 || a.Agree != 2 || a.JudgeOnly != 1 || a.LabelOnly != 1 || a.Accuracy != 0.5 || a.Kappa != 0 || a.FalsePass != 1 || a.FalseFail != 1 {
		t.Errorf("agreement %+v", a)
	}
	perfect := Calibrate([]Verdict{{ID: "a", Pass: true}, {ID: "b"}, {ID: "c", Pass: true}, {ID: "d"}}, labels)
	if perfect.Accuracy != 1 || perfect.Kappa != 1 {
		t.Errorf("perfect agreement %+v", perfect)
	}
	for _, c := range []struct{ in, want string }{
		{`{"id":"a"}`, `l.jsonl:1: label: missing`},
		{`{"id":"a","label":"meh"}`, `l.jsonl:1: label: must be "pass", "fail", true or false (got "\"meh\"")`},
		{`{"label":"pass"}`, `l.jsonl:1: id: missing`},
		{`{"id":"a","label":"pass","note":"x"}`, `l.jsonl:1: note: unknown field`},
		{"{\"id\":\"a\",\"label\":\"pass\"}\n{\"id\":\"a\",\"label\":\"fail\"}", `l.jsonl:2: id: duplicate id "a" (first on line 1)`},
		{`[1]`, `l.jsonl:1: each line must be one JSON object`},
		{"# only a comment", `l.jsonl: no labels`},
	} {
		if _, err := ReadLabels(strings.NewReader(c.in), "l.jsonl"); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want %s…", c.in, err, c.want)
		}
	}
}

func FuzzReadLabels(f *testing.F) {
	f.Add([]byte("{\"id\":\"a\",\"label\":\"pass\"}\n{\"id\":\"b\",\"label\":false}\n"))
	f.Add([]byte("{\"id\":\"\\u0000\",\"label\":\"FAIL\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ReadLabels(strings.NewReader(string(data)), "fuzz.jsonl")
		if err == nil && len(l) == 0 {
			t.Fatal("no error and no labels")
		}
	})
}

func FuzzParseVerdict(f *testing.F) {
	f.Add("reasoning\nVERDICT: PASS")
	f.Add("**Verdict: 2**")
	f.Fuzz(func(t *testing.T, s string) {
		v, _, err := ParseVerdict(s, "PASS", "FAIL", "1", "2", "TIE")
		if err == nil && v != "PASS" && v != "FAIL" && v != "1" && v != "2" && v != "TIE" {
			t.Fatalf("verdict %q", v)
		}
	})
}

// TestJudgeSecretsHidden: the judge's API key and the user info of its URL never reach a
// verdict's error or the summary.
func TestJudgeSecretsHidden(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad key sk-secret-123 for you", http.StatusUnauthorized)
	}))
	defer srv.Close()
	o := Options{Endpoint: strings.Replace(srv.URL, "http://", "http://admin:hunter22@", 1), Model: "m", APIKey: "sk-secret-123"}
	vs, u := Rubric(context.Background(), o, []Item{{"a", "q", "x"}})
	s := RubricSummary(o, vs, u)
	for _, text := range []string{vs[0].Err, s.Endpoint} {
		if strings.Contains(text, "sk-secret-123") || strings.Contains(text, "hunter22") {
			t.Errorf("a secret in %q", text)
		}
	}
	if !strings.Contains(vs[0].Err, "HTTP 401") {
		t.Errorf("error %q", vs[0].Err)
	}
}
