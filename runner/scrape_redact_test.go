package runner

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestScraperURLRedactionAndEpoch: the /metrics URL is built with net/url (the endpoint's
// query kept as a query), nothing secret is recorded, errors are not garbled when there is no
// key, and sample times count from the run epoch, scaled.
func TestScraperURLRedactionAndEpoch(t *testing.T) {
	polls := make(chan string, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case polls <- r.URL.Path + "?" + r.URL.RawQuery:
		default:
		}
		if r.URL.Path != "/metrics" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		w.Write([]byte("vllm:num_requests_running 1\n"))
	}))
	defer srv.Close()
	base := strings.Replace(srv.URL, "http://", "http://alice:PASSW0RDxyz@", 1) + "/v1?api-key=QSECRETabc"
	epoch := time.Now().Add(-10 * time.Second)
	s := startScraper(context.Background(), scrapeOptions{URL: base, Interval: 5 * time.Millisecond, TimeScale: 4})
	if got := <-polls; got != "/metrics?api-key=QSECRETabc" {
		t.Fatalf("polled %s, want /metrics?api-key=QSECRETabc", got)
	}
	<-polls
	s.Stop()
	s.SetEpoch(epoch)
	d := s.Data()
	all := fmt.Sprintf("%+v", d)
	for _, c := range []string{"alice", "PASSW0RDxyz", "QSECRETabc"} {
		if strings.Contains(all, c) {
			t.Errorf("%s recorded: %s", c, all)
		}
	}
	if len(d.Samples) == 0 || d.Samples[0].T < 40 || d.Samples[0].T > 400 {
		t.Errorf("first sample at %v s: want about 4 x 10 s after the epoch", d.Samples)
	}

	// No key, a failing server: the error reads as it was written.
	dead := startScraper(context.Background(), scrapeOptions{URL: "http://127.0.0.1:1", Interval: time.Hour})
	dead.Stop()
	if e := dead.Data().LastError; !strings.Contains(e, "Get ") || strings.Contains(e, "<redacted>G") {
		t.Errorf("last error %q", e)
	}
}
