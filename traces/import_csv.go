package traces

import (
	"github.com/llmbench/llmbench/internal/safetext"

	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Azure LLM inference traces (2023 and 2024 releases): CSV with columns TIMESTAMP,
// ContextTokens and GeneratedTokens; TIMESTAMP is "YYYY-MM-DD HH:MM:SS.fffffff", sometimes with
// a UTC offset.
var azureLayouts = []string{
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999 Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04:05.999999999Z07:00",
}

func parseAzureTime(s string) (time.Time, bool) {
	for _, l := range azureLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func importAzure(r io.Reader, name string, opts ImportOptions) ([]Request, error) {
	t, err := openCSV(r, name, []string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"})
	if err != nil {
		return nil, err
	}
	sink := &rowSink{name: name, opts: opts}
	var origin time.Time
	var stamps []time.Time
	err = t.rows(sink, func(rec []string, line int) (bool, error) {
		ts, _ := t.get(rec, "TIMESTAMP")
		when, ok := parseAzureTime(ts)
		if !ok {
			return true, sink.bad(line, "TIMESTAMP", fmt.Sprintf("must be a time like 2023-11-16 18:15:46.6805900 (got %s)", safetext.Quote(ts, 64)))
		}
		ctx, _ := t.get(rec, "ContextTokens")
		in, ok := parseCount(ctx)
		if !ok || in < 1 {
			return true, sink.bad(line, "ContextTokens", fmt.Sprintf("must be an integer >= 1 (got %s)", safetext.Quote(ctx, 64)))
		}
		gen, _ := t.get(rec, "GeneratedTokens")
		out, ok := parseCount(gen)
		if !ok {
			return true, sink.bad(line, "GeneratedTokens", fmt.Sprintf("must be an integer >= 1 (got %s)", safetext.Quote(gen, 64)))
		}
		if out == 0 {
			return true, sink.failed(line, "GeneratedTokens")
		}
		if len(stamps) == 0 || when.Before(origin) {
			origin = when
		}
		stamps = append(stamps, when)
		return sink.add(Request{ID: "r" + strconv.Itoa(line), InputTokens: in, OutputTokens: out, Class: opts.Class, Line: line}), nil
	})
	if err != nil {
		return nil, err
	}
	for i := range sink.reqs {
		sink.reqs[i].Arrival = stamps[i].Sub(origin)
	}
	return sink.reqs, nil
}

// BurstGPT: CSV with Timestamp (seconds), Model, Request tokens, Response tokens, Total tokens,
// Log Type; the later release adds Session ID and Elapsed time. Failed requests have 0
// response tokens.
func importBurstGPT(r io.Reader, name string, opts ImportOptions) ([]Request, error) {
	t, err := openCSV(r, name, []string{"Timestamp", "Model", "Request tokens", "Response tokens"})
	if err != nil {
		return nil, err
	}
	sink := &rowSink{name: name, opts: opts}
	err = t.rows(sink, func(rec []string, line int) (bool, error) {
		model, _ := t.get(rec, "Model")
		if opts.Model != "" && !strings.EqualFold(model, opts.Model) {
			return true, nil
		}
		ts, _ := t.get(rec, "Timestamp")
		sec, err := strconv.ParseFloat(ts, 64)
		if err != nil || math.IsNaN(sec) || math.IsInf(sec, 0) || math.Abs(sec) > maxSeconds {
			return true, sink.bad(line, "Timestamp", fmt.Sprintf("must be a number of seconds (got %s)", safetext.Quote(ts, 64)))
		}
		reqTok, _ := t.get(rec, "Request tokens")
		in, ok := parseCount(reqTok)
		if !ok {
			return true, sink.bad(line, "Request tokens", fmt.Sprintf("must be an integer >= 1 (got %s)", safetext.Quote(reqTok, 64)))
		}
		respTok, _ := t.get(rec, "Response tokens")
		out, ok := parseCount(respTok)
		if !ok {
			return true, sink.bad(line, "Response tokens", fmt.Sprintf("must be an integer >= 1 (got %s)", safetext.Quote(respTok, 64)))
		}
		if out == 0 {
			return true, sink.failed(line, "Response tokens")
		}
		if in == 0 {
			return true, sink.bad(line, "Request tokens", "must be an integer >= 1 (got \"0\")")
		}
		req := Request{ID: "r" + strconv.Itoa(line), Arrival: time.Duration(math.Round(sec * 1e9)),
			InputTokens: in, OutputTokens: out, Class: opts.Class, Line: line}
		if req.Class == "" {
			if lt, ok := t.get(rec, "Log Type"); ok {
				req.Class = logTypeClass(lt)
			}
		}
		if sid, ok := t.get(rec, "Session ID"); ok && sid != "" {
			req.Session = sid
		}
		if opts.KeepModel {
			req.Model = importedModel(model)
		}
		return sink.add(req), nil
	})
	if err != nil {
		return nil, err
	}
	rebase(sink.reqs)
	numberTurns(sink.reqs)
	return sink.reqs, nil
}

// logTypeClass maps BurstGPT's Log Type to a class tag: "Conversation log" -> "conversation",
// "API log" -> "api"; anything else is lowercased with spaces turned into dashes.
func logTypeClass(lt string) string {
	s := strings.ToLower(strings.TrimSpace(lt))
	s = strings.TrimSuffix(s, " log")
	return strings.Join(strings.Fields(s), "-")
}
