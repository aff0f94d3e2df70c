package refengine

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateStreams = flag.Bool("update-streams", false, "rewrite testdata/streams.golden from the engine's current output")

// streamVariant is an engine configuration the stream goldens cover.
type streamVariant struct {
	name string
	cfg  func(w string) Config
}

func streamVariants() []streamVariant {
	base := func(w string) Config {
		return Config{Wire: w, Seed: 7, Clock: NewVirtualClock(fixedNow()), Now: fixedNow}
	}
	return []streamVariant{
		{"plain", base},
		{"reasoning", func(w string) Config { c := base(w); c.ReasoningFraction = 0.5; return c }},
		{"speculative", func(w string) Config { c := base(w); c.SpecK = 3; return c }},
		{"error-mid", func(w string) Config { c := base(w); c.Faults = Faults{ErrorMid: 1}; return c }},
		{"no-done", func(w string) Config { c := base(w); c.Faults = Faults{NoDone: 1}; return c }},
		{"malformed", func(w string) Config { c := base(w); c.Faults = Faults{Malformed: 1, BadJSON: 1}; return c }},
	}
}

// streamRequests are the streamed requests of every API (and a few whole ones), sent in this
// order to each engine.
var streamRequests = []struct{ name, path, body string }{
	{"completions", "/v1/completions", `{"prompt":"hi there","max_tokens":9,"stream":true,"stream_options":{"include_usage":true}}`},
	{"chat", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi there"}],"max_tokens":9,"stream":true}`},
	{"chat-usage", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":9,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`},
	{"chat-tools", "/v1/chat/completions", `{"messages":[{"role":"user","content":` + jsonString(flightTask) + `}],"tools":` + flightTools + `,"max_tokens":80,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`},
	{"responses", "/v1/responses", `{"input":"hi there","max_output_tokens":9,"stream":true}`},
	{"messages", "/v1/messages", `{"messages":[{"role":"user","content":"hi there"}],"max_tokens":9,"stream":true}`},
	// Whole (non-streamed) bodies: the Responses and Messages encoders write these too.
	{"responses-whole", "/v1/responses", `{"input":"hi there","max_output_tokens":9}`},
	{"messages-whole", "/v1/messages", `{"messages":[{"role":"user","content":"hi there"}],"max_tokens":9}`},
	{"chat-whole", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi there"}],"max_tokens":9}`},
}

// TestStreamGoldens pins the bytes of every streamed response (and of the whole bodies the
// same encoders write), per wire personality, API and
// engine variant, to the digests in testdata/streams.golden: a refactoring of the stream
// writers must leave every stream byte-identical. Run with -update-streams to rewrite the
// file after an intended wire change.
func TestStreamGoldens(t *testing.T) {
	got := map[string]string{}
	var order []string
	bodies := map[string]string{}
	for _, w := range Wires {
		for _, v := range streamVariants() {
			_, url := startEngine(t, v.cfg(w))
			for _, r := range streamRequests {
				name := w + "/" + v.name + "/" + r.name
				body := postForBody(t, url+r.path, r.body, strings.Contains(r.body, `"stream":true`))
				sum := sha256.Sum256(body)
				got[name] = fmt.Sprintf("%s %d", hex.EncodeToString(sum[:]), len(body))
				bodies[name] = string(body)
				order = append(order, name)
			}
		}
	}
	path := filepath.Join("testdata", "streams.golden")
	if *updateStreams {
		var b strings.Builder
		for _, name := range order {
			fmt.Fprintf(&b, "%s %s\n", name, got[name])
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want := readStreamGoldens(t, path)
	if len(want) != len(got) {
		t.Errorf("%d goldens, %d streams", len(want), len(got))
	}
	for _, name := range order {
		if want[name] != got[name] {
			t.Errorf("%s: digest %q, want %q; the stream:\n%s", name, got[name], want[name], bodies[name])
		}
	}
}

// postForBody posts body and returns the whole response body, which must be a 200 (a stream
// when stream is set).
func postForBody(t *testing.T, url, body string, stream bool) []byte {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || stream != strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%s: %s %s", url, resp.Status, raw)
	}
	return raw
}

// readStreamGoldens reads "name digest length" lines.
func readStreamGoldens(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("%s: bad line %q", path, sc.Text())
		}
		want[name] = rest
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return want
}
