package loadgen

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// barrierServer holds every request until n have arrived, so that each needs a connection
// (HTTP/1.1) or a stream (HTTP/2) of its own, and records what it saw of them.
type barrierServer struct {
	n       int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
	remotes []string
	protos  []int
}

func newBarrierServer(n int) *barrierServer {
	return &barrierServer{n: n, all: make(chan struct{})}
}

func (b *barrierServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	b.mu.Lock()
	b.remotes = append(b.remotes, host)
	b.protos = append(b.protos, r.ProtoMajor)
	b.arrived++
	if b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
	case <-r.Context().Done():
		return
	}
	s := startSSE(w)
	s.data(chatChunk(" hi"))
	s.done()
}

func barrierReqs(n int) []traces.Request {
	reqs := make([]traces.Request, n)
	for i := range reqs {
		reqs[i] = oneReq(fmt.Sprint(i), 1)
	}
	return reqs
}

func TestSourceAddrsRoundRobinPerConnection(t *testing.T) {
	const n = 6
	b := newBarrierServer(n)
	srv := newServer(t, b.ServeHTTP)
	tg := target(srv.URL)
	var err error
	if tg.SourceAddrs, err = ParseSourceAddrs("127.0.0.2-127.0.0.4"); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), barrierReqs(n), Options{Target: tg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Succeeded != n || res.Connections != n {
		t.Fatalf("succeeded %d, connections %d; want %d of each", res.Succeeded, res.Connections, n)
	}
	count := map[string]int{}
	for _, r := range b.remotes {
		count[r]++
	}
	want := map[string]int{"127.0.0.2": 2, "127.0.0.3": 2, "127.0.0.4": 2}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		t.Fatalf("connections per source address %v, want %v", count, want)
	}
}

func TestSourceAddrsRefusedWithACustomDialer(t *testing.T) {
	tg := target("http://127.0.0.1:1")
	tg.SourceAddrs = []netip.Addr{netip.MustParseAddr("127.0.0.2")}
	_, err := Run(context.Background(), barrierReqs(1), Options{Target: tg, Dial: (&net.Dialer{}).DialContext}, nil)
	if err == nil {
		t.Fatal("source addresses with Options.Dial: want an error")
	}
}

// An exhausted file-descriptor table is the client's limit: client_fd_limit, never a
// connect failure blamed on the server.
func TestFDExhaustionIsClientFDLimit(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("socket", errno)}
		}
		rec := runOne(t, Options{Target: target("http://127.0.0.1:1"), Dial: dial}, oneReq("a", 1))
		if rec.Failure != metrics.FailClientFDLimit {
			t.Errorf("%v: failure %q (%s), want %q", errno, rec.Failure, rec.Error, metrics.FailClientFDLimit)
		}
	}
	refused := func(ctx context.Context, network, addr string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	if rec := runOne(t, Options{Target: target("http://127.0.0.1:1"), Dial: refused}, oneReq("a", 1)); rec.Failure != metrics.FailConnect {
		t.Errorf("connection refused: failure %q, want %q", rec.Failure, metrics.FailConnect)
	}
}

// With --http2 against an h2c server, concurrent streams share connections; without it each
// needs its own.
func TestHTTP2MultiplexesStreams(t *testing.T) {
	const n = 40
	for _, h2 := range []bool{false, true} {
		b := newBarrierServer(n)
		srv := httptest.NewUnstartedServer(b)
		srv.Config.Protocols = new(http.Protocols)
		srv.Config.Protocols.SetHTTP1(true)
		srv.Config.Protocols.SetUnencryptedHTTP2(true)
		srv.Start()
		tg := target(srv.URL)
		tg.HTTP2 = h2
		res, err := Run(context.Background(), barrierReqs(n), Options{Target: tg}, nil)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.Succeeded != n {
			t.Fatalf("http2=%v: %d of %d succeeded", h2, res.Succeeded, n)
		}
		wantProto := 1
		if h2 {
			wantProto = 2
		}
		if slices.ContainsFunc(b.protos, func(p int) bool { return p != wantProto }) {
			t.Errorf("http2=%v: protocols seen %v, want all HTTP/%d", h2, b.protos, wantProto)
		}
		switch {
		case !h2 && res.Connections != n:
			t.Errorf("HTTP/1.1: %d connections for %d concurrent streams, want one each", res.Connections, n)
		case h2 && res.Connections > n/4:
			t.Errorf("HTTP/2: %d connections for %d concurrent streams, want them multiplexed", res.Connections, n)
		}
		t.Logf("http2=%v: %d streams over %d connections", h2, n, res.Connections)
	}
}

func TestParseSourceAddrs(t *testing.T) {
	ok := map[string]string{
		"127.0.0.2-127.0.0.4":              "[127.0.0.2 127.0.0.3 127.0.0.4]",
		"10.0.0.5, 10.0.0.7":               "[10.0.0.5 10.0.0.7]",
		"127.0.0.9-127.0.0.9,127.0.0.1":    "[127.0.0.9 127.0.0.1]",
		"::1":                              "[::1]",
		"fd00::fe-fd00::101":               "[fd00::fe fd00::ff fd00::100 fd00::101]",
		"::ffff:127.0.0.2-127.0.0.3":       "[127.0.0.2 127.0.0.3]",
		"10.0.255.255-10.1.0.0":            "[10.0.255.255 10.1.0.0]",
		"127.0.0.2 - 127.0.0.3 ,127.0.0.8": "[127.0.0.2 127.0.0.3 127.0.0.8]",
	}
	for in, want := range ok {
		got, err := ParseSourceAddrs(in)
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("%q: %v %v, want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "127.0.0.1,", "localhost", "127.0.0.3-127.0.0.2", "127.0.0.1-::1",
		"10.0.0.0-10.255.255.255", "0.0.0.0", "224.0.0.1", "127.0.0.1-", "1.2.3.4/24"} {
		if got, err := ParseSourceAddrs(in); err == nil {
			t.Errorf("%q: %v, want an error", in, got)
		}
	}
}

func FuzzParseSourceAddrs(f *testing.F) {
	for _, s := range []string{"127.0.0.2-127.0.0.9", "10.0.0.5,10.0.0.7", "::1", "fd00::1-fd00::ff", "1.2.3.4-", "-", ","} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		addrs, err := ParseSourceAddrs(s)
		if err != nil {
			return
		}
		if len(addrs) == 0 || len(addrs) > maxSourceAddrs {
			t.Fatalf("%q: %d addresses", s, len(addrs))
		}
		for _, a := range addrs {
			if !a.IsValid() || a.IsUnspecified() || a.IsMulticast() || a.Is4In6() {
				t.Fatalf("%q: bad address %v", s, a)
			}
		}
	})
}

func TestHTTP2OverTLS(t *testing.T) {
	for _, offer := range []bool{true, false} {
		b := newBarrierServer(4)
		srv := httptest.NewUnstartedServer(b)
		srv.EnableHTTP2 = offer
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.StartTLS()
		tg := target(srv.URL)
		tg.HTTP2, tg.InsecureSkipVerify = true, true
		var col collector
		res, err := Run(context.Background(), barrierReqs(4), Options{Target: tg}, col.sink)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if offer && (res.Succeeded != 4 || res.Connections != 1 || slices.ContainsFunc(b.protos, func(p int) bool { return p != 2 })) {
			t.Errorf("h2 offered: %d succeeded over %d connections, protocols %v; want 4 over 1, HTTP/2", res.Succeeded, res.Connections, b.protos)
		}
		if !offer {
			if res.Succeeded != 0 || len(col.recs) != 4 || col.recs[0].Failure != metrics.FailConnect || !strings.Contains(col.recs[0].Error, "--http2") {
				t.Errorf("HTTP/1.1-only TLS server with --http2: %+v, first record %q %q; want connect failures naming HTTP/2", res, col.recs[0].Failure, col.recs[0].Error)
			}
		}
	}
}
