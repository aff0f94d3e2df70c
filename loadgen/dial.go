package loadgen

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llmbench/llmbench/internal/safetext"
)

// dialer returns the client's TCP dial function: one net.Dialer per source address (or one
// without), taken in turn for each new connection, counting the connections made.
func (c *client) dialer(t Target) func(ctx context.Context, network, addr string) (net.Conn, error) {
	mk := func(local net.Addr) *net.Dialer {
		return &net.Dialer{Timeout: t.Timeouts.Connect, KeepAlive: 30 * time.Second, LocalAddr: local}
	}
	ds := []*net.Dialer{mk(nil)}
	if len(t.SourceAddrs) > 0 {
		ds = ds[:0]
		for _, a := range t.SourceAddrs {
			ds = append(ds, mk(&net.TCPAddr{IP: a.AsSlice(), Zone: a.Zone()}))
		}
	}
	var next atomic.Uint64
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := ds[(next.Add(1)-1)%uint64(len(ds))]
		conn, err := d.DialContext(ctx, network, addr)
		if err == nil {
			c.conns.Add(1)
		}
		return conn, err
	}
}

// maxSourceAddrs bounds the addresses ParseSourceAddrs expands (a /16 of IPv4).
const maxSourceAddrs = 1 << 16

// ParseSourceAddrs reads a --source-addrs value: comma-separated IP addresses and inclusive
// ranges FIRST-LAST of one family (127.0.0.2-127.0.0.9, or 10.0.0.5,10.0.0.7), at most
// 65,536 addresses in all, in the order given.
func ParseSourceAddrs(s string) ([]netip.Addr, error) {
	var out []netip.Addr
	bad := func(part, why string) error {
		return fmt.Errorf("source addresses: %s: %s (want IP addresses and ranges like 127.0.0.2-127.0.0.9, separated by commas)", safetext.Quote(part, 80), why)
	}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, bad(part, "empty entry")
		}
		first, last, isRange := strings.Cut(part, "-")
		a, err := netip.ParseAddr(strings.TrimSpace(first))
		if err != nil {
			return nil, bad(part, "not an IP address")
		}
		a = a.Unmap()
		b := a
		if isRange {
			if b, err = netip.ParseAddr(strings.TrimSpace(last)); err != nil {
				return nil, bad(part, "the range's end is not an IP address")
			}
			b = b.Unmap()
			switch {
			case a.Is4() != b.Is4() || a.Zone() != b.Zone():
				return nil, bad(part, "the range's ends are of different families")
			case b.Less(a):
				return nil, bad(part, "the range ends before it starts")
			}
		}
		for x := a; ; x = x.Next() {
			if len(out) == maxSourceAddrs {
				return nil, bad(part, fmt.Sprintf("more than %d addresses in all", maxSourceAddrs))
			}
			if !x.IsValid() {
				break
			}
			if x.IsUnspecified() || x.IsMulticast() {
				return nil, bad(part, "an unspecified or multicast address cannot be a source")
			}
			out = append(out, x)
			if x == b {
				break
			}
		}
	}
	return out, nil
}

// http2Transport speaks HTTP/2 only: h2c with prior knowledge over dial, or TLS with ALPN h2
// when tlsOn (h2client.go says why it is our own). net/http's own HTTP/2 (Transport.Protocols)
// was not an option either: it dials a connection for every request that finds none ready,
// so N streams started together open N connections (TestHTTP2MultiplexesStreams measured 40
// for 40); here the requests waiting for a dial share it, and another connection opens only
// when one's stream limit is reached.
func (c *client) http2Transport(tlsOn bool, conf *tls.Config, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *h2Transport {
	if !tlsOn {
		conf = nil
	}
	return newH2Transport(dial, conf)
}
