package main

import (
	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/usecase"
)

// Cancellations (issue 38, docs/cancellations.md): the flag of the gen command that makes a
// seeded share of the generated requests cancelled by the client (workloads/cancel.go);
// usecase.Gen refuses it with a quality probe preset.

// addGenCancelFlags registers gen's --cancel into o.Spec.Cancel.
func addGenCancelFlags(fs *pflag.FlagSet, o *usecase.GenOptions) {
	fs.StringVar(&o.Spec.Cancel, "cancel", "", "cancel a seeded share of the requests: SHARE:DELAY-DISTRIBUTION in ms after sending, e.g. 0.1:uniform:200-2000 (writes cancel_after_ms)")
}
