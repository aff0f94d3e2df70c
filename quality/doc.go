// Package quality grades responses under load (issue 17, docs/ARCHITECTURE.md "Quality under
// load"): the expect checks of a trace line (exact, contains, not_contains, regex, json,
// json_schema, number, tool_call, max_tokens_used; traces/FORMAT.md) run on the answer text
// and tool calls loadgen kept in the record, and the outcome is stamped on the record
// (metrics.Record.Grade, one of metrics.GradeReasons or metrics.GradePass), from which
// package metrics computes pass rates, intervals and paired comparisons. Regrade grades a
// finished results directory again offline.
//
// It must not do network I/O (the LLM judge, which calls an endpoint, is package
// quality/judge) nor compute statistics (package metrics owns them).
package quality
