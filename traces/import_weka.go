package traces

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// Weka / kv-cache-tester agentic coding traces (the format AIPerf reads as its Weka trace, the
// corpus of SemiAnalysis's AgentX benchmark): one JSON object per conversation,
//
//	{"id", "models", "block_size", "hash_id_scope", "tool_tokens", "system_tokens",
//	 "requests": [ {"t", "type": "n"|"s", "model", "in", "out", "hash_ids", "input_types",
//	               "output_types", "stop", "api_time", "think_time", "ttft"},
//	               {"t", "type": "subagent", "agent_id", "subagent_type", "status",
//	                "requests": [...], ...}, ... ]}
//
// FORMAT.md "Weka agentic traces" gives the mapping: each conversation is a session, each
// API call a turn that waits for the call before it in its list, a sub-agent's first call
// waits for the parent's call before the marker, and the parent's next call joins the
// sub-agents that do not run in the background. A file holds one conversation, or several
// one after another (JSON Lines).

// MaxWekaDepth bounds the nesting of sub-agents in a Weka trace (each level is parsed again, so
// the bound keeps a hostile file from costing time quadratic in its size).
const MaxWekaDepth = 64

// wekaTrace is the state of one conversation's import.
type wekaTrace struct {
	w       *wekaImport
	session string
	offset  int64 // added to hash ids of a conversation with local scope
	reqs    []Request
	resp    []time.Duration // each request's estimated response time
	tool    []bool          // whether each request's stop was tool_use
	// relative is the nested timestamp convention: sub-agent requests' t relative to their
	// marker (raw kv-cache-tester traces) rather than absolute (published AgentX traces).
	relative bool
	stopped  bool // the limit was reached
}

type wekaImport struct {
	name   string
	data   []byte
	lines  lineCounter
	sink   *rowSink
	block  int // the block size of the file's conversations (0 until the first)
	traces int
}

func importWeka(r io.Reader, name string, opts ImportOptions) ([]Request, error) {
	if opts.TPOT < 0 {
		return nil, &LineError{File: name, Field: "tpot", Reason: "must be >= 0"}
	}
	if opts.TPOT == 0 {
		opts.TPOT = DefaultImportTPOT
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	w := &wekaImport{name: name, data: data, lines: lineCounter{data: data, line: 1}, sink: &rowSink{name: name, opts: opts}}
	off := 0
	for {
		off = skipJSONSpace(data, off)
		if off >= len(data) {
			break
		}
		n, err := valueLen(data[off:])
		if err != nil {
			return nil, w.syntax(off, err)
		}
		more, err := w.conversation(off, data[off:off+n])
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		off += n
	}
	if w.block > 0 && w.block != DefaultBlockTokens && opts.OnBlockTokens != nil {
		opts.OnBlockTokens(w.block)
	}
	rebase(w.sink.reqs)
	return w.sink.reqs, nil
}

// valueLen is the length of the JSON value at the start of data.
func valueLen(data []byte) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return 0, err
	}
	return int(dec.InputOffset()), nil
}

func (w *wekaImport) syntax(off int, err error) error {
	var se *json.SyntaxError
	at := off
	reason := "invalid JSON: " + err.Error()
	switch {
	case errors.As(err, &se):
		at += int(se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		at = len(w.data)
		reason = "the file ends inside a JSON value (was it truncated?)"
	}
	return &LineError{File: w.name, Line: w.lines.at(at), Reason: reason, Err: err}
}

// rawAt is a member of a JSON object with the offset of its value in the file.
type rawAt struct {
	off int
	raw []byte
}

// members splits the JSON object at data[off:off+len(obj)] into its members (the last of
// duplicate keys wins); ok is false when it is not an object.
func (w *wekaImport) members(off int, obj []byte) (map[string]rawAt, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	tok, err := dec.Token()
	if err != nil {
		return nil, false, w.syntax(off, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, false, nil
	}
	m := map[string]rawAt{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false, w.syntax(off, err)
		}
		key, _ := tok.(string)
		start := skipJSONSpace(obj, int(dec.InputOffset()))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false, w.syntax(off, err)
		}
		m[key] = rawAt{off + start, raw}
	}
	return m, true, nil
}

// elements splits the JSON array raw (at off) into its elements; ok is false when it is not an
// array.
func (w *wekaImport) elements(v rawAt) ([]rawAt, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(v.raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, false, w.syntax(v.off, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, false, nil
	}
	var out []rawAt
	for dec.More() {
		start := skipJSONSpace(v.raw, int(dec.InputOffset()))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false, w.syntax(v.off, err)
		}
		out = append(out, rawAt{v.off + start, raw})
	}
	return out, true, nil
}

// skipJSONSpace skips whitespace and the separators between JSON tokens.
func skipJSONSpace(data []byte, off int) int {
	for off < len(data) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

// scalar decodes a member's value (numbers as json.Number).
func scalar(raw []byte) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return v
}

// conversation imports one conversation object at off; more is false once the limit is reached.
func (w *wekaImport) conversation(off int, obj []byte) (bool, error) {
	line := w.lines.at(off)
	m, ok, err := w.members(off, obj)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, &LineError{File: w.name, Line: line, Reason: "each conversation must be a JSON object {\"id\", \"block_size\", \"requests\": [...]} (got " + describe(scalar(obj)) + ")"}
	}
	w.traces++
	t := &wekaTrace{w: w, session: "w" + strconv.Itoa(w.traces)}
	if v, ok := m["id"]; ok {
		s, isStr := scalar(v.raw).(string)
		if why := checkID(s); !isStr || s == "" || why != "" {
			return false, &LineError{File: w.name, Line: w.lines.at(v.off), Field: "id", Reason: "must be a non-empty conversation id without control characters (got " + describe(scalar(v.raw)) + ")"}
		}
		t.session = s
	}
	block := 0
	if v, ok := m["block_size"]; ok {
		n, why := intField(scalar(v.raw), 1, "must be an integer >= 1")
		if why == "" && n > MaxTokens {
			why = fmt.Sprintf("must be at most %d", MaxTokens)
		}
		if why != "" {
			return false, &LineError{File: w.name, Line: w.lines.at(v.off), Field: "block_size", Reason: why}
		}
		block = int(n)
	}
	local := true
	if v, ok := m["hash_id_scope"]; ok {
		switch s := scalar(v.raw); s {
		case "local":
		case "global":
			local = false
		default:
			return false, &LineError{File: w.name, Line: w.lines.at(v.off), Field: "hash_id_scope", Reason: "must be \"local\" or \"global\" (got " + describe(s) + ")"}
		}
	}
	reqsAt, ok := m["requests"]
	if !ok {
		return false, &LineError{File: w.name, Line: line, Field: "requests", Reason: "missing (a Weka conversation lists its API calls in requests)"}
	}
	if block > 0 {
		if w.block > 0 && block != w.block {
			return false, &LineError{File: w.name, Line: w.lines.at(m["block_size"].off), Field: "block_size",
				Reason: fmt.Sprintf("%d differs from the %d of the conversations before it (hash_ids of one trace share one block size; import them to separate files)", block, w.block)}
		}
		w.block = block
	}
	if local {
		t.offset = int64(w.traces-1) << 40
	}
	// The nested timestamp convention: relative when any sub-agent request is earlier than its
	// marker.
	rel, err := w.relativeNested(reqsAt, 0, 0)
	if err != nil {
		return false, err
	}
	t.relative = rel
	if _, err := t.list(reqsAt, "requests", 0, nil); err != nil {
		return false, err
	}
	return !t.stopped, nil
}

// relativeNested reports whether a sub-agent request in list (whose marker is at base seconds,
// absolute-style) is earlier than its marker.
func (w *wekaImport) relativeNested(list rawAt, base float64, depth int) (bool, error) {
	if depth > MaxWekaDepth {
		return false, &LineError{File: w.name, Line: w.lines.at(list.off), Field: "requests",
			Reason: fmt.Sprintf("sub-agents nested more than %d deep", MaxWekaDepth)}
	}
	elems, ok, err := w.elements(list)
	if err != nil || !ok {
		return false, err
	}
	for _, e := range elems {
		m, ok, err := w.members(e.off, e.raw)
		if err != nil || !ok {
			continue
		}
		tv, _ := asNumber(scalar(m["t"].raw))
		if tv.f < base {
			return true, nil
		}
		if scalar(m["type"].raw) == "subagent" {
			if inner, ok := m["requests"]; ok {
				if rel, err := w.relativeNested(inner, tv.f, depth+1); err != nil || rel {
					return rel, err
				}
			}
		}
	}
	return false, nil
}

// list imports the requests of one agent's list (the conversation's, or a sub-agent's) whose
// timestamps are relative to base seconds; spawn are the indexes (in t.reqs) of the requests
// its first call waits for. It returns the index of the list's last call (-1 for none).
func (t *wekaTrace) list(v rawAt, path string, base float64, spawn []int) (int, error) {
	w := t.w
	elems, ok, err := w.elements(v)
	if err != nil {
		return -1, err
	}
	if !ok {
		return -1, &LineError{File: w.name, Line: w.lines.at(v.off), Field: path, Reason: "must be an array of requests (got " + describe(scalar(v.raw)) + ")"}
	}
	prev := -1
	var joins []int // the last calls of the sub-agents since prev
	for k, e := range elems {
		if t.stopped {
			break
		}
		field := fmt.Sprintf("%s[%d]", path, k)
		line := w.lines.at(e.off)
		m, ok, err := w.members(e.off, e.raw)
		if err != nil {
			return -1, err
		}
		if !ok {
			if err := w.sink.bad(line, field, "must be an object (got "+describe(scalar(e.raw))+")"); err != nil {
				return -1, err
			}
			continue
		}
		at, why := t.seconds(m, "t", true)
		if why != "" {
			if at.off >= 0 {
				line = w.lines.at(at.off)
			}
			if err := w.sink.bad(line, field+".t", why); err != nil {
				return -1, err
			}
			continue
		}
		ts := base + at.f
		kind, _ := scalar(m["type"].raw).(string)
		base := spawn
		if prev >= 0 {
			base = []int{prev}
		}
		deps := append(append([]int(nil), base...), joins...)
		switch kind {
		case "subagent":
			last, err := t.subagent(m, field, line, ts, base)
			if err != nil {
				return -1, err
			}
			if last >= 0 {
				joins = append(joins, last)
			}
			continue
		case "n", "s":
		default:
			if err := w.sink.bad(line, field+".type", "must be \"n\", \"s\" or \"subagent\" (got "+describe(scalar(m["type"].raw))+")"); err != nil {
				return -1, err
			}
			continue
		}
		idx, err := t.call(m, e, field, line, ts, deps)
		if err != nil {
			return -1, err
		}
		if idx >= 0 {
			prev, joins = idx, nil
		}
	}
	return prev, nil
}

// subagent imports the calls of a sub-agent marker m, at ts seconds, whose first call waits
// for the calls spawn. It returns the index of the sub-agent's last call when its caller
// joins it (-1 when it has none, or was launched asynchronously, or m lists no calls).
func (t *wekaTrace) subagent(m map[string]rawAt, field string, line int, ts float64, spawn []int) (int, error) {
	inner, ok := m["requests"]
	if !ok {
		return -1, t.w.sink.bad(line, field+".requests", "missing (a subagent marker lists its calls in requests)")
	}
	innerBase := 0.0
	if t.relative {
		innerBase = ts
	}
	last, err := t.list(inner, field+".requests", innerBase, spawn)
	if err != nil {
		return -1, err
	}
	if status, _ := scalar(m["status"].raw).(string); last >= 0 && status != "async_launched" {
		return last, nil
	}
	return -1, nil
}

type wekaNum struct {
	off int
	f   float64
}

// seconds reads member name as a finite number of seconds >= 0.
func (t *wekaTrace) seconds(m map[string]rawAt, name string, required bool) (wekaNum, string) {
	v, ok := m[name]
	if !ok {
		if required {
			return wekaNum{off: -1}, "missing (seconds from the conversation's start)"
		}
		return wekaNum{off: -1}, ""
	}
	x := scalar(v.raw)
	if x == nil && !required {
		return wekaNum{off: -1}, ""
	}
	n, ok := asNumber(x)
	if !ok || math.IsNaN(n.f) || math.IsInf(n.f, 0) || n.f < 0 || n.f > MaxSeconds {
		return wekaNum{off: v.off}, fmt.Sprintf("must be a number of seconds from 0 to %d (got %s)", MaxSeconds, describe(x))
	}
	return wekaNum{v.off, n.f}, ""
}

// call imports one API call; it returns its index in t.reqs, or -1 when it was skipped.
// A field in error skips the call (the sink says whether the import goes on, err nil, or
// stops, err set).
func (t *wekaTrace) call(m map[string]rawAt, e rawAt, field string, line int, ts float64, deps []int) (int, error) {
	sink := t.w.sink
	in, out, ok, err := t.callTokens(m, field, line)
	if !ok {
		return -1, err
	}
	q := Request{ID: t.session + "." + field, Line: line, InputTokens: in, OutputTokens: out, Class: sink.opts.Class,
		Session: t.session, Arrival: clampSeconds(ts)}
	if len(q.ID) > MaxIDBytes {
		q.ID = t.session + "." + strconv.Itoa(len(t.reqs)+1)
	}
	if ok, err := t.callHashIDs(m, field, &q); !ok {
		return -1, err
	}
	think, why := t.seconds(m, "think_time", false)
	if why != "" {
		return -1, sink.bad(t.w.lines.at(think.off), field+".think_time", why)
	}
	api, why := t.seconds(m, "api_time", false)
	if why != "" {
		return -1, sink.bad(t.w.lines.at(api.off), field+".api_time", why)
	}
	if len(deps) > 0 {
		wait := t.callWait(think, deps, q.Arrival)
		if wekaToolResult(m) || t.tool[deps[0]] {
			q.ToolDelay = wait
		} else {
			q.Think = wait
		}
	}
	q.After = []int{}
	for _, d := range deps {
		q.After = append(q.After, d+1) // turn k is t.reqs[k-1]
	}
	resp := time.Duration(min(float64(out)*float64(sink.opts.TPOT), float64(MaxSeconds*time.Second)))
	if api.off >= 0 {
		resp = clampSeconds(api.f)
	}
	if sink.opts.KeepModel {
		name, _ := scalar(m["model"].raw).(string)
		q.Model = importedModel(name)
	}
	stop, _ := scalar(m["stop"].raw).(string)
	return t.add(q, resp, stop == "tool_use"), nil
}

// callTokens reads a call's input and output token counts (in >= 1, out >= 1, neither past
// MaxTokens); ok is false when the call is to be skipped, err what the sink said of it.
func (t *wekaTrace) callTokens(m map[string]rawAt, field string, line int) (in, out int, ok bool, err error) {
	w, sink := t.w, t.w.sink
	count := func(name string, min int64) (int, bool, error) {
		v, ok := m[name]
		if !ok {
			return 0, false, sink.bad(line, field+"."+name, "missing (a token count)")
		}
		n, why := intField(scalar(v.raw), min, fmt.Sprintf("must be an integer >= %d", min))
		if why != "" {
			return 0, false, sink.bad(w.lines.at(v.off), field+"."+name, why)
		}
		return int(min64(n, MaxTokens+1)), true, nil
	}
	if in, ok, err = count("in", 1); !ok {
		return 0, 0, false, err
	}
	if out, ok, err = count("out", 0); !ok {
		return 0, 0, false, err
	}
	if out == 0 {
		return 0, 0, false, sink.failed(line, field+".out")
	}
	for _, c := range []struct {
		name string
		n    int
	}{{"in", in}, {"out", out}} {
		if c.n > MaxTokens {
			return 0, 0, false, sink.bad(line, field+"."+c.name, fmt.Sprintf("%d is past the token cap of trace format v1 (%d)", c.n, MaxTokens))
		}
	}
	return in, out, true, nil
}

// callHashIDs sets q.HashIDs from the call's hash_ids, moved by the conversation's offset;
// ok is false when they are malformed (err: what the sink said).
func (t *wekaTrace) callHashIDs(m map[string]rawAt, field string, q *Request) (ok bool, err error) {
	v, ok := m["hash_ids"]
	if !ok {
		return true, nil
	}
	x := scalar(v.raw)
	if x == nil {
		return true, nil
	}
	ids, ferrs := decodeHashIDs(x)
	if len(ferrs) > 0 {
		return false, t.w.sink.bad(t.w.lines.at(v.off), field+"."+ferrs[0].field, ferrs[0].reason)
	}
	for i := range ids {
		ids[i] += t.offset
	}
	q.HashIDs = ids
	return true, nil
}

// callWait is the wait before a call with dependencies deps arriving at arrival: the
// recorded think_time, else the gap after the latest dependency's (recorded or estimated)
// end, at most MaxSeconds.
func (t *wekaTrace) callWait(think wekaNum, deps []int, arrival time.Duration) time.Duration {
	if think.off >= 0 {
		return clampSeconds(think.f)
	}
	end := time.Duration(math.MinInt64)
	for _, d := range deps {
		end = max(end, t.reqs[d].Arrival+t.resp[d])
	}
	return min(max(0, arrival-end), MaxSeconds*time.Second)
}

// wekaToolResult says whether a call carries a tool result (its input_types name one): its
// wait is then a tool delay, not a think time.
func wekaToolResult(m map[string]rawAt) bool {
	v, ok := m["input_types"]
	if !ok {
		return false
	}
	arr, _ := scalar(v.raw).([]any)
	for _, x := range arr {
		if x == "tool_result" {
			return true
		}
	}
	return false
}

// add appends the call q with its response time resp (toolStop: it stopped for a tool call)
// and hands it to the sink, numbering it with the conversation's next turn; it returns the
// call's index in t.reqs. Turns number the conversation's calls in import order, so every
// dependency has a lower turn; the conversation's requests go to the sink as they come.
func (t *wekaTrace) add(q Request, resp time.Duration, toolStop bool) int {
	t.reqs = append(t.reqs, q)
	t.resp = append(t.resp, resp)
	t.tool = append(t.tool, toolStop)
	idx := len(t.reqs) - 1
	t.reqs[idx].Turn = idx + 1
	if !t.w.sink.add(t.reqs[idx]) {
		t.stopped = true
	}
	return idx
}

func min64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}
