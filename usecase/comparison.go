package usecase

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
)

// ComparisonFormatHelp is the --format help of compare and ab.
const ComparisonFormatHelp = "output: text (alias terminal), markdown (alias md), json"

// CheckComparisonFormat refuses a --format that WriteComparison cannot print, before any
// work is done (an A/B takes minutes).
func CheckComparisonFormat(format string) error {
	switch format {
	case "text", "terminal", "", "markdown", "md", "json":
		return nil
	}
	return fmt.Errorf("--format %q: want text (alias terminal), markdown (alias md) or json", format)
}

// TextFormat is false for the formats meant for a program (json, markdown): with them,
// stdout carries only that format and every message goes to stderr.
func TextFormat(format string) bool {
	switch format {
	case "", "text", "terminal":
		return true
	}
	return false
}

// WriteComparison prints c on env.Stdout in format and, with htmlPath, writes the HTML
// report there.
func WriteComparison(env *Env, c *metrics.Comparison, format, htmlPath, echartsJS string, pairs *reports.RequestPairs) error {
	switch format {
	case "text", "terminal", "":
		if err := reports.WriteComparisonTerminal(env.Stdout, c); err != nil {
			return err
		}
	case "markdown", "md":
		if err := reports.WriteComparisonMarkdown(env.Stdout, c); err != nil {
			return err
		}
	case "json":
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c); err != nil {
			return err
		}
	default:
		return CheckComparisonFormat(format)
	}
	if htmlPath == "" {
		return nil
	}
	f, err := os.Create(htmlPath)
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	if err := reports.WriteComparisonHTML(f, c, reports.HTMLOptions{EChartsJS: echartsJS, Getenv: env.Getenv, Pairs: pairs}); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "comparison report: %s\n", htmlPath)
	return nil
}
