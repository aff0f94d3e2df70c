package refengine

import (
	"net"
	"testing"
)

func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := LimitListener(inner, 1)
	defer l.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	c1, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	s1 := <-accepted
	c2, err := net.Dial("tcp", inner.Addr().String()) // queued in the kernel backlog
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	select {
	case c := <-accepted:
		t.Fatalf("accepted a second connection %v while one was open", c.RemoteAddr())
	default:
	}
	s1.Close() // frees the slot: the second connection is accepted
	s2, ok := <-accepted
	if !ok {
		t.Fatal("listener closed")
	}
	s2.Close()
	if LimitListener(inner, 0) != inner {
		t.Fatal("n = 0 should not wrap")
	}
}
