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

	"github.com/llmbench/llmbench/internal/reaper"
)

// serverProc is one server of a `sweep --serve-cmd` grid: a shell running the expanded
// command in a process group of its own, its output going to its log file. With a keeper
// (internal/reaper) the group's leader is llmbench's keeper, which runs the shell and stops
// every process under it, also when llmbench is killed outright.
type serverProc struct {
	proc   *reaper.Proc
	cmd    *exec.Cmd
	log    *os.File
	kept   bool            // the group's leader is the keeper
	exited <-chan struct{} // closed once the group's leader has exited
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
// appended to logPath. With keeper (the llmbench executable, on Linux) the shell runs under
// llmbench's keeper, which stops the shell's processes within grace of SIGTERM and when
// llmbench ends however it ends; without one the shell itself leads the group and, on Linux,
// gets SIGKILL when llmbench ends (its own children do not).
func startServer(command, logPath, keeper string, grace time.Duration) (*serverProc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("server log: %w", err)
	}
	argv := []string{"/bin/sh", "-c", command}
	cmd, kept, death := exec.Command(argv[0], argv[1:]...), false, syscall.SIGKILL
	if keeper != "" && reaper.Supported {
		cmd, kept, death = reaper.Command(keeper, grace, argv...), true, syscall.SIGTERM
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := inProcessGroup(cmd); err != nil {
		f.Close()
		return nil, err
	}
	proc, err := reaper.Start(cmd, death)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("start %q: %w", command, err)
	}
	return &serverProc{proc: proc, cmd: cmd, log: f, kept: kept, exited: proc.Exited()}, nil
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
			return fmt.Errorf("the server exited (%v) before %s answered", p.proc.Err(), url)
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
// group to exit (with the keeper: for the keeper, which waits timeout for every process under
// it and then kills them), then SIGKILL to the group. It says how the server ended, and
// closes the log.
func (p *serverProc) stop(timeout time.Duration) string {
	defer p.log.Close()
	select {
	case <-p.exited:
		_ = signalGroup(p.cmd, syscall.SIGKILL) // whatever the shell left behind
		return fmt.Sprintf("had exited (%v)", p.proc.Err())
	default:
	}
	_ = signalGroup(p.cmd, syscall.SIGTERM)
	wait := timeout
	if p.kept {
		wait += 15 * time.Second // the keeper's own SIGKILL comes at timeout
	}
	deadline := time.NewTimer(wait)
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
				if !p.kept || p.proc.ExitCode() != reaper.Killed {
					how = "stopped by SIGTERM"
				}
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
