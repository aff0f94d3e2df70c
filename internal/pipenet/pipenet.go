// Package pipenet is an in-memory network for tests that run HTTP inside a testing/synctest
// bubble, where real sockets would escape the bubble's virtual clock: Dial hands one end of a
// net.Pipe to Accept. Tests only; nothing in the llmbench binary imports it.
package pipenet

import (
	"context"
	"net"
	"sync"
)

// Net is both the listener (Accept, Close, Addr) an http.Server serves on and the dialer
// (Dial, as an http.Transport's DialContext) its clients use.
type Net struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

// New returns an open network.
func New() *Net { return &Net{conns: make(chan net.Conn), closed: make(chan struct{})} }

// Dial connects to the listener: it blocks until Accept takes the other end, the network is
// closed (net.ErrClosed) or ctx ends.
func (p *Net) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	a, b := net.Pipe()
	select {
	case p.conns <- b:
		return a, nil
	case <-p.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Accept returns the server end of the next Dial.
func (p *Net) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.closed:
		return nil, net.ErrClosed
	}
}

// Close closes the network; it may be called more than once.
func (p *Net) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

// Addr is a placeholder address ("pipe").
func (p *Net) Addr() net.Addr { return addr{} }

type addr struct{}

func (addr) Network() string { return "pipe" }
func (addr) String() string  { return "pipe" }
