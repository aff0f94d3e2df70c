package main

import (
	"fmt"
	"time"
)

// watchInterrupts turns the first interrupt into a graceful stop (cancel: stop sending, wait
// for in-flight requests up to grace, write complete results marked interrupted) and the
// second into an immediate exit after flush() has made the records written so far readable.
// It returns a function that stops watching.
func (app *App) watchInterrupts(cancel func(), flush func(), grace time.Duration) func() {
	if app.Interrupts == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case <-app.Interrupts:
				n++
				if n == 1 {
					app.interrupted.Store(true)
					fmt.Fprintf(app.Stderr, "\ninterrupt: stopped sending; waiting up to %s for in-flight requests, then writing results (Ctrl-C again to exit now)\n", grace)
					cancel()
					continue
				}
				flush()
				fmt.Fprintln(app.Stderr, "\ninterrupt: exiting now; records written so far are in requests.msgpack")
				app.exit(130)
				return
			}
		}
	}()
	return func() { close(done) }
}
