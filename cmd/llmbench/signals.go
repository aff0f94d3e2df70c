package main

import (
	"time"

	"github.com/llmbench/llmbench/runner"
)

// interrupts is the process's interrupt wiring as the runner takes it.
func (app *App) interrupts() runner.Interrupts {
	return runner.Interrupts{C: app.Interrupts, Log: app.Stderr, Exit: app.Exit, OnFirst: func() { app.interrupted.Store(true) }}
}

// watchInterrupts turns the first interrupt into a graceful stop and the second into an exit
// (see runner.Interrupts.Watch). It returns a function that stops watching.
func (app *App) watchInterrupts(cancel func(), flush func(), grace time.Duration) func() {
	return app.interrupts().Watch(cancel, flush, grace)
}
