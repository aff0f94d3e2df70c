package loadgen

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// fullBacklog returns the URL of a loopback listener that never accepts and whose accept
// queue is full (listen backlog 0, one connection queued): Linux then drops every new SYN,
// so a dial waits until its own timeout, as for a host that does not answer. "" when the
// queue could not be filled.
func fullBacklog(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	// Queue connections until one is not taken (at most a few: the queue holds backlog+1).
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return "http://" + addr
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Log("the accept queue did not fill; the unreachable case is not tested")
	return ""
}
