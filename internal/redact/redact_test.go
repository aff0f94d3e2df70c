package redact

import (
	"strings"
	"testing"
)

func TestPolicyHidesEverySecretOfTheTarget(t *testing.T) {
	p := New(Target{
		URL:     "http://alice:PASSW0RDxyz@127.0.0.1:8000/v1?api-key=QSECRETabc&api-version=2024",
		APIKey:  "sk-KEYSECRET",
		Headers: map[string]string{"Authorization": "Bearer SECRET123", "X-Basic": "Basic Ym9iOmh1bnRlcjI="},
	})
	text := "Incorrect API key provided: SECRET123; id-SECRET123; key sk-KEYSECRET; user alice pw PASSW0RDxyz q QSECRETabc bob hunter2 " +
		"Post \"http://alice:***@127.0.0.1:8000/v1/completions?api-key=QSECRETabc\": EOF"
	got := p.String(text)
	for _, c := range []string{"SECRET123", "sk-KEYSECRET", "alice", "PASSW0RDxyz", "QSECRETabc", "hunter2", "bob:"} {
		if strings.Contains(got, c) {
			t.Errorf("%q survives: %s", c, got)
		}
	}
	if !strings.Contains(got, "Incorrect API key provided: "+Marker) || !strings.Contains(got, "id-"+Marker) {
		t.Errorf("the surrounding text should stay: %s", got)
	}
	if strings.Contains(got, "Bearer") {
		t.Errorf("scheme word is not part of the text, nothing to check: %s", got)
	}
}

func TestSchemeWordsAndShortPartsStay(t *testing.T) {
	p := New(Target{Headers: map[string]string{"Authorization": "Bearer SECRET123", "X-Short": "ab"}})
	got := p.String("Bearer token refused; ab")
	if got != "Bearer token refused; ab" {
		t.Errorf("got %q: scheme words and parts under MinSecret must not be replaced", got)
	}
	// An empty policy changes nothing (the scraper once replaced "" everywhere).
	if got := New(Target{}).String("Get error"); got != "Get error" {
		t.Errorf("empty policy: %q", got)
	}
	var nilP *Policy
	if got := nilP.String("plain"); got != "plain" {
		t.Errorf("nil policy: %q", got)
	}
}

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"},
		{"http://alice:pw@h:1/v1?api-key=X&v=", "http://<redacted>@h:1/v1?api-key=<redacted>&v="},
		{"https://sk-abcdef@host/v1", "https://<redacted>@host/v1"},
		{"not a url", "not a url"},
		{"http://u:p@h:1/%zz?k=v", "http://<redacted>@h:1/%zz?k=<redacted>"},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCommand(t *testing.T) {
	p := New(Target{URL: "http://alice:pw12@h/v1?api-key=QSECRETabc"})
	got := p.Command("llmbench", []string{"run", "--endpoint", "http://alice:pw12@h/v1?api-key=QSECRETabc",
		"--header", "Authorization: Bearer X", "--header=X-Key:Y", "--api-key-env", "MY_KEY", "--api-key=zzz",
		"--timeout-first-token", "5s", "--max-tokens", "9"})
	want := "llmbench run --endpoint http://<redacted>@h/v1?api-key=<redacted> --header <redacted> " +
		"--header=<redacted> --api-key-env MY_KEY --api-key=<redacted> --timeout-first-token 5s --max-tokens 9"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// A joined command line (an older summary.json) gets the same treatment.
	old := "llmbench run --endpoint http://alice:pw12@h/v1?api-key=QSECRETabc --api-key zzz --header 'X: y' --seed 3"
	if got := CommandString(old); strings.Contains(got, "QSECRETabc") || strings.Contains(got, "zzz") ||
		strings.Contains(got, "alice") || strings.Contains(got, "***") || !strings.Contains(got, "--seed 3") {
		t.Errorf("CommandString: %s", got)
	}
}

func FuzzURLsInHidesUserInfo(f *testing.F) {
	f.Add("x http://alice:pw@h:1/p?k=secretvalue y")
	f.Add("http://[::1")
	f.Fuzz(func(t *testing.T, s string) {
		got := URLsIn(s)
		if !strings.Contains(s, "://") && got != s {
			t.Fatalf("text without a URL changed: %q -> %q", s, got)
		}
	})
}
