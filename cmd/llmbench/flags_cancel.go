package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/llmbench/llmbench/workloads"
)

// Cancellations (issue 38, docs/cancellations.md): the flags of the gen command that make a
// seeded share of the generated requests cancelled by the client (workloads/cancel.go).

// addGenCancelFlags registers gen's --cancel into so.Cancel; preset reports the --preset
// given, whose quality probes take no cancellations.
func addGenCancelFlags(cmd *cobra.Command, so *workloads.SpecOptions, preset *string) {
	cmd.Flags().StringVar(&so.Cancel, "cancel", "", "cancel a seeded share of the requests: SHARE:DELAY-DISTRIBUTION in ms after sending, e.g. 0.1:uniform:200-2000 (writes cancel_after_ms)")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Flags().Changed("cancel") && workloads.IsProbePreset(*preset) {
			return fmt.Errorf("--cancel does not apply to the quality probe preset %q (a cancelled probe has no answer to grade); generate the traffic with a traffic preset", *preset)
		}
		return nil
	}
}
