package runner

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// serverProc is one server of a `sweep --serve-cmd` grid: a shell running the expanded
// command in a process group of its own, its output going to its log file.
type serverProc struct {
	cmd     *exec.Cmd
	log     *os.File
	exited  chan struct{} // closed once the shell has exited
	waitErr error         // its exit status, set before exited is closed
}

// freePort returns a port free on 127.0.0.1 now (the server binds it a moment later).
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startServer starts command under /bin/sh in its own process group, its stdout and stderr
// appended to logPath.
func startServer(command, logPath string) (*serverProc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("server log: %w", err)
	}
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Stdout, cmd.Stderr = f, f
	if err := inProcessGroup(cmd); err != nil {
		f.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %q: %w", command, err)
	}
	p := &serverProc{cmd: cmd, log: f, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// waitHealthy polls url (the server's health endpoint) until it answers 2xx, the server
// exits, timeout passes or ctx is canceled.
func (p *serverProc) waitHealthy(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("health check %s: %w", url, err)
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("the server exited (%v) before %s answered", p.waitErr, url)
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return fmt.Errorf("%s did not answer 2xx within %s", url, timeout)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stop ends the server: SIGTERM to its process group, up to timeout for every process of the
// group to exit, then SIGKILL to the group. It says how the server ended, and closes the log.
func (p *serverProc) stop(timeout time.Duration) string {
	defer p.log.Close()
	select {
	case <-p.exited:
		_ = signalGroup(p.cmd, syscall.SIGKILL) // whatever the shell left behind
		return fmt.Sprintf("had exited (%v)", p.waitErr)
	default:
	}
	_ = signalGroup(p.cmd, syscall.SIGTERM)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	how := fmt.Sprintf("killed (SIGKILL) after not exiting within %s of SIGTERM", timeout)
wait:
	for {
		select {
		case <-deadline.C:
			break wait
		case <-poll.C:
			if p.done() && !groupAlive(p.cmd) {
				how = "stopped by SIGTERM"
				break wait
			}
		}
	}
	_ = signalGroup(p.cmd, syscall.SIGKILL)
	<-p.exited
	return how
}

// done says whether the shell has exited.
func (p *serverProc) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}
