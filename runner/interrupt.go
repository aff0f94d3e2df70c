package runner

import (
	"fmt"
	"io"
	"os"
	"time"
)

// Interrupts is how a command learns of Ctrl-C and how it ends the process on the second one.
// The zero value watches nothing.
type Interrupts struct {
	// C delivers Ctrl-C / SIGTERM; nil means the run is never interrupted.
	C <-chan os.Signal
	// Log receives the messages that say what an interrupt did.
	Log io.Writer
	// Exit ends the process at once (os.Exit in main); nil does nothing.
	Exit func(code int)
	// OnFirst, when set, is called at the first interrupt, before the graceful stop begins
	// (the CLI notes that the command must end with status 130).
	OnFirst func()
	// Stopping and Exiting, when set, replace the words printed at the first interrupt
	// (what the graceful stop does) and at the second (what is left), for a command that
	// does not send requests itself (k8s run).
	Stopping, Exiting string
}

// Watch turns the first interrupt into a graceful stop (cancel: stop sending, wait for
// in-flight requests up to grace, write complete results marked interrupted) and the second
// into an immediate exit with status 130 after flush() has made the records written so far
// readable. It returns a function that stops watching.
func (in Interrupts) Watch(cancel func(), flush func(), grace time.Duration) func() {
	if in.C == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case <-in.C:
				n++
				if n == 1 {
					if in.OnFirst != nil {
						in.OnFirst()
					}
					if in.Stopping != "" {
						fmt.Fprintf(in.Log, "\ninterrupt: %s (Ctrl-C again to exit now)\n", in.Stopping)
					} else {
						fmt.Fprintf(in.Log, "\ninterrupt: stopped sending; waiting up to %s for in-flight requests, then writing results (Ctrl-C again to exit now)\n", grace)
					}
					cancel()
					continue
				}
				flush()
				if in.Exiting != "" {
					fmt.Fprintf(in.Log, "\ninterrupt: exiting now; %s\n", in.Exiting)
				} else {
					fmt.Fprintln(in.Log, "\ninterrupt: exiting now; records written so far are in requests.msgpack")
				}
				if in.Exit != nil {
					in.Exit(130)
				}
				return
			}
		}
	}()
	return func() { close(done) }
}
