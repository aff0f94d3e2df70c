package loadgen

import (
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func okStream(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	s := startSSE(w)
	s.data(textChunk(" a", -1))
	s.done()
}

func TestHTTPSWithCustomCA(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(okStream))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusted handshake is expected
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	tg := target(srv.URL)
	tg.Backend = "openai"
	if rec := runOne(t, Options{Target: tg}, oneReq("untrusted", 1)); rec.Failure != "connect" || !strings.Contains(rec.Error, "certificate") {
		t.Errorf("untrusted certificate: %s %q, want a connect failure naming the certificate", rec.Failure, rec.Error)
	}
	tg.CACertFile = ca
	if rec := runOne(t, Options{Target: tg}, oneReq("ca", 1)); !rec.OK() {
		t.Errorf("with the CA: %s %s", rec.Failure, rec.Error)
	}
	tg.CACertFile, tg.InsecureSkipVerify = "", true
	if rec := runOne(t, Options{Target: tg}, oneReq("insecure", 1)); !rec.OK() {
		t.Errorf("insecure: %s %s", rec.Failure, rec.Error)
	}
	tg.CACertFile = filepath.Join(t.TempDir(), "missing.pem")
	if _, err := Run(t.Context(), nil, Options{Target: tg}, nil); err == nil || !strings.Contains(err.Error(), "CA certificate file") {
		t.Errorf("missing CA file: %v", err)
	}
}

// TestHangAfterDone: a server that keeps the response open after [DONE] must not hold the
// request (its record is a success) nor the run.
func TestHangAfterDone(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s := startSSE(w)
		s.data(textChunk(" a", -1))
		s.done()
		<-r.Context().Done()
	})
	tg := target(srv.URL)
	tg.Backend = "openai"
	rec := runOne(t, Options{Target: tg}, oneReq("h", 1))
	if !rec.OK() || len(rec.Chunks) != 1 {
		t.Errorf("record %+v", rec)
	}
}

func TestNormalizeBase(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"http://127.0.0.1:8000/", "http://127.0.0.1:8000"},
		{"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000"},
		{"https://api.example.com/openai/v1/", "https://api.example.com/openai"},
		{"http://user:pw@h:1/v1", "http://h:1"},
		{"ftp://h", ""},
		{"127.0.0.1:8000", ""},
		{"http://", ""},
	}
	for _, tt := range tests {
		got, err := normalizeBase(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("normalizeBase(%q) = %q, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("normalizeBase(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := normalizeBase("ftp://user:secretpw@h"); err == nil || strings.Contains(err.Error(), "secretpw") {
		t.Errorf("error %v must not show the password", err)
	}
}

// TestURLQueryKept: a query on the target URL (api-version, a key) goes to every endpoint
// and never into records or errors.
func TestURLQueryKept(t *testing.T) {
	const key = "querysecret-123456"
	var seen []string
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.Path+"?"+r.URL.RawQuery)
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/v1/models" {
			io.WriteString(w, `{"data":[{"id":"m"}]}`)
			return
		}
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"message":"echo `+r.URL.RawQuery+`"}}`)
	})
	tg := Target{URL: srv.URL + "/v1?api-version=2024-06&key=" + key, Stream: true}
	rec := runOne(t, Options{Target: tg}, oneReq("q", 1))
	want := []string{"/v1/models?api-version=2024-06&key=" + key, "/v1/completions?api-version=2024-06&key=" + key}
	if len(seen) != 2 || seen[0] != want[0] || seen[1] != want[1] {
		t.Errorf("server saw %q, want %q", seen, want)
	}
	if rec.Failure != "http_5xx" || strings.Contains(rec.Error, key) {
		t.Errorf("record %s %q leaks the key or misclassifies", rec.Failure, rec.Error)
	}
}
