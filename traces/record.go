package traces

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/safetext"
)

// Field names of trace format v1, in the order WriteJSONL writes them.
const (
	fID           = "id"
	fArrival      = "arrival_s"
	fClass        = "class"
	fInputTokens  = "input_tokens"
	fOutputTokens = "output_tokens"
	fSession      = "session"
	fTurn         = "turn"
	fThink        = "think_s"
	fHashIDs      = "hash_ids"
	fTemperature  = "temperature"
	fSeed         = "seed"
	fPrompt       = "prompt"
	fMessages     = "messages"
	// Agentic sessions.
	fAfter     = "after"
	fToolDelay = "tool_delay_s"
	fAffinity  = "affinity"
	// Per-request model (issue 38).
	fModel = "model"
)

// Fields lists every field of trace format v1 in canonical order.
var Fields = []string{fID, fArrival, fClass, fInputTokens, fOutputTokens, fSession, fTurn,
	fThink, fHashIDs, fTemperature, fSeed, fPrompt, fMessages, fTools, fToolChoice, fResponseFormat, fExpect, fAfter, fToolDelay, fAffinity, fModel,
	fCancelAfter, // cancellations (cancel.go)
}

var knownField = func() map[string]bool {
	m := make(map[string]bool, len(Fields))
	for _, f := range Fields {
		m[f] = true
	}
	return m
}()

// Documented bounds of trace format v1 (traces/FORMAT.md, docs/reliability.md). They
// are checked on every read, so `trace validate` and every replay refuse the same lines: a
// count past them would make a replay allocate without bound or wait for years.
const (
	// MaxTokens bounds input_tokens and output_tokens (2^20 = 1,048,576, past the context of
	// every model llmbench knows).
	MaxTokens = 1 << 20
	// MaxSeconds bounds arrival_s and think_s (365 days). A replay that would last longer
	// than a day is refused unless allowed (llmbench run --max-span).
	MaxSeconds = 365 * 24 * 3600
	// MaxTurn bounds turn.
	MaxTurn = 1 << 20
	// MaxIDBytes bounds id, which is sent as the X-Request-Id header.
	MaxIDBytes = 1024
)

var (
	reasonTokens  = "must be an integer >= 1"
	reasonSeconds = "must be a number of seconds >= 0"
	boundTokens   = fmt.Sprintf("must be at most %d (the token cap of trace format v1)", MaxTokens)
	boundSeconds  = fmt.Sprintf("must be at most %d seconds (365 days, the time cap of trace format v1)", MaxSeconds)
)

// fieldError is one problem inside a record; the caller adds file and line.
type fieldError struct{ field, reason string }

// member is one key/value pair of a decoded object, in input order.
type member struct {
	key string
	val any
}

// decodeRecord validates one decoded trace object and builds its Request. It returns every
// problem it finds, in field order (unknown and malformed fields first, then missing ones).
func decodeRecord(ms []member, opts ReadOptions) (Request, []fieldError) {
	d := &recordDecoder{opts: opts, seen: map[string]bool{}}
	for _, m := range ms {
		if d.seen[m.key] {
			d.bad(m.key, "appears more than once in the object (keep one)")
			continue
		}
		d.seen[m.key] = true
		if why := d.field(m); why != "" {
			d.bad(m.key, why)
		}
	}
	d.checkCombined()
	return d.r, d.errs
}

// recordDecoder is one record being decoded: the Request so far, its problems in the order
// found, the fields seen, and what the quality checks need of tools and tool_choice.
type recordDecoder struct {
	opts       ReadOptions
	r          Request
	errs       []fieldError
	seen       map[string]bool
	toolNames  []string // quality (issue 17)
	choiceName string
}

// bad records a problem with field.
func (d *recordDecoder) bad(field, reason string) { d.errs = append(d.errs, fieldError{field, reason}) }

// field decodes one member into d.r and returns why its value is wrong ("" when it is
// right, or when its problems were recorded field by field inside it).
func (d *recordDecoder) field(m member) string {
	if why, ok := d.scalarField(m); ok {
		return why
	}
	if d.nestedField(m) {
		return ""
	}
	if why, ok := d.cancelField(m); ok { // cancellations (cancel.go)
		return why
	}
	switch m.key {
	case fToolChoice:
		var why string
		d.r.ToolChoice, d.choiceName, why = decodeToolChoice(m.val)
		return why
	case fAffinity:
		var why string
		d.r.Affinity, why = stringField(m.val, true, "must be a non-empty string")
		if why == "" {
			why = checkHeaderValue(d.r.Affinity)
		}
		return why
	}
	if !d.opts.Lenient {
		return "unknown field (trace format v1 has " + strings.Join(Fields, ", ") +
			"; fix the spelling, or read with --lenient to ignore unknown fields)"
	}
	return ""
}

// scalarField decodes a field whose value is one string or number; ok is false for any
// other key.
func (d *recordDecoder) scalarField(m member) (why string, ok bool) {
	r := &d.r
	var n int64
	switch m.key {
	case fID:
		r.ID, why = stringField(m.val, true, "must be a non-empty string")
		if why == "" {
			why = checkID(r.ID)
		}
	case fArrival:
		r.Arrival, why = cappedSeconds(m.val)
	case fClass:
		r.Class, why = stringField(m.val, false, "must be a string")
	case fInputTokens:
		n, why = boundedInt(m.val, 1, MaxTokens, reasonTokens, boundTokens)
		r.InputTokens = int(n)
	case fOutputTokens:
		n, why = boundedInt(m.val, 1, MaxTokens, reasonTokens, boundTokens)
		r.OutputTokens = int(n)
	case fSession:
		r.Session, why = stringField(m.val, true, "must be a non-empty string")
	case fTurn:
		n, why = boundedInt(m.val, 1, MaxTurn, "must be an integer >= 1", fmt.Sprintf("must be at most %d", MaxTurn))
		r.Turn = int(n)
	case fThink:
		r.Think, why = cappedSeconds(m.val)
	case fToolDelay:
		r.ToolDelay, why = cappedSeconds(m.val)
	case fTemperature:
		var t float64
		if t, why = floatField(m.val, "must be a number >= 0"); why == "" {
			r.Temperature = &t
		}
	case fSeed:
		var s int64
		if s, why = intField(m.val, -1<<63, "must be an integer"); why == "" {
			r.Seed = &s
		}
	case fPrompt:
		r.Prompt, why = stringField(m.val, false, "must be a string")
	case fModel:
		r.Model, why = modelField(m.val)
	default:
		return "", false
	}
	return why, true
}

// nestedField decodes a field whose value is an array or object, recording each of its
// problems; ok is false for any other key.
func (d *recordDecoder) nestedField(m member) bool {
	r := &d.r
	var fe []fieldError
	switch m.key {
	case fHashIDs:
		r.HashIDs, fe = decodeHashIDs(m.val)
	case fMessages:
		r.Messages, fe = decodeMessages(m.val, d.opts)
	case fTools:
		r.Tools, d.toolNames, fe = decodeTools(m.val, d.opts)
	case fResponseFormat:
		r.ResponseFormat, fe = decodeResponseFormat(m.val, d.opts)
	case fExpect:
		r.Expect, fe = decodeExpect(m.val)
	case fAfter:
		r.afterRefs, fe = decodeAfter(m.val)
	default:
		return false
	}
	d.errs = append(d.errs, fe...)
	return true
}

// cappedSeconds parses a duration in seconds >= 0 and at most MaxSeconds; the value parsed
// is returned with the reason when it is past the cap.
func cappedSeconds(v any) (time.Duration, string) {
	t, why := secondsField(v, reasonSeconds)
	if why == "" && t > MaxSeconds*time.Second {
		why = boundSeconds + " (got " + describe(v) + ")"
	}
	return t, why
}

// checkCombined reports what the fields seen say together: the required fields missing,
// fields that exclude or need one another, and the quality checks (checkQuality).
func (d *recordDecoder) checkCombined() {
	seen := d.seen
	for _, req := range []struct{ name, what string }{
		{fArrival, reasonSeconds}, {fInputTokens, reasonTokens}, {fOutputTokens, reasonTokens},
	} {
		if !seen[req.name] {
			d.bad(req.name, "missing (required: "+strings.TrimPrefix(req.what, "must be ")+")")
		}
	}
	if seen[fPrompt] && seen[fMessages] {
		d.bad(fMessages, "cannot be combined with prompt (give prompt for /v1/completions or messages for /v1/chat/completions)")
	}
	if seen[fTurn] && !seen[fSession] {
		d.bad(fTurn, "needs a session (add \"session\" or remove \"turn\")")
	}
	checkQuality(&d.r, seen, d.toolNames, d.choiceName, d.bad)
	if seen[fAfter] && !seen[fSession] {
		d.bad(fAfter, "needs a session (the turns it names are turns of the same session)")
	}
	if seen[fAfter] && d.r.afterRefs == nil {
		d.r.afterRefs = []afterRef{} // "after": [] starts a branch of its own
	}
}

// boundedInt parses an integer in [min, max]; below is the reason for a value that is not an
// integer >= min, above for one past max.
func boundedInt(v any, min, max int64, below, above string) (int64, string) {
	n, why := intField(v, min, below)
	if why == "" && n > max {
		return 0, above + " (got " + describe(v) + ")"
	}
	if why != "" {
		if x, ok := asNumber(v); ok && x.f > float64(max) {
			return 0, above + " (got " + describe(v) + ")"
		}
	}
	return n, why
}

// MaxModelBytes bounds model, which is sent in the request body and breaks results down.
const MaxModelBytes = 256

// modelField parses the per-request model name: a non-empty string of at most MaxModelBytes
// bytes without control characters or surrounding spaces.
func modelField(v any) (string, string) {
	s, why := stringField(v, true, "must be a non-empty string (the model or adapter name sent; leave it out for the run's --model)")
	if why != "" {
		return "", why
	}
	if len(s) > MaxModelBytes {
		return "", fmt.Sprintf("must be at most %d bytes (got %d)", MaxModelBytes, len(s))
	}
	if strings.TrimSpace(s) != s {
		return "", "must not start or end with spaces (got " + safetext.Quote(s, 40) + ")"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return "", "must not hold control characters (got " + safetext.Quote(s, 40) + ")"
		}
	}
	return s, ""
}

// checkID rejects ids that cannot travel as an X-Request-Id header.
func checkID(id string) string {
	if len(id) > MaxIDBytes {
		return fmt.Sprintf("must be at most %d bytes (got %d; it is sent as the X-Request-Id header)", MaxIDBytes, len(id))
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c == 0x7f {
			return "must not hold control characters (it is sent as the X-Request-Id header; got " + safetext.Quote(id, 40) + ")"
		}
	}
	return ""
}

func decodeHashIDs(v any) ([]int64, []fieldError) {
	arr, ok := v.([]any)
	if !ok {
		return nil, []fieldError{{fHashIDs, "must be an array of integers (got " + describe(v) + ")"}}
	}
	ids := make([]int64, 0, len(arr))
	var errs []fieldError
	for i, e := range arr {
		id, why := intField(e, -1<<63, "must be an integer")
		if why != "" {
			errs = append(errs, fieldError{fmt.Sprintf("%s[%d]", fHashIDs, i), why})
			continue
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		ids = nil
	}
	return ids, errs
}

func decodeMessages(v any, opts ReadOptions) ([]Message, []fieldError) {
	arr, ok := v.([]any)
	if !ok {
		return nil, []fieldError{{fMessages, `must be an array of {"role","content"} objects (got ` + describe(v) + ")"}}
	}
	if len(arr) == 0 {
		return nil, []fieldError{{fMessages, "must hold at least one message (or leave messages out)"}}
	}
	msgs := make([]Message, 0, len(arr))
	var errs []fieldError
	for i, e := range arr {
		at := fmt.Sprintf("%s[%d]", fMessages, i)
		obj, ok := asObject(e)
		if !ok {
			errs = append(errs, fieldError{at, `must be an object {"role","content"} (got ` + describe(e) + ")"})
			continue
		}
		var m Message
		var haveRole, haveContent bool
		for _, kv := range obj {
			var why string
			switch kv.key {
			case "role":
				haveRole = true
				m.Role, why = stringField(kv.val, true, "must be a non-empty string such as \"user\"")
			case "content":
				haveContent = true
				m.Content, why = stringField(kv.val, false, "must be a string")
			case fImages:
				var fe []fieldError
				m.Images, fe = decodeImages(kv.val, at+"."+fImages, opts)
				errs = append(errs, fe...)
			default:
				if !opts.Lenient {
					why = "unknown field (a message has role, content and images; read with --lenient to ignore others)"
				}
			}
			if why != "" {
				errs = append(errs, fieldError{at + "." + kv.key, why})
			}
		}
		if !haveRole {
			errs = append(errs, fieldError{at + ".role", "missing (required: a non-empty string such as \"user\")"})
		}
		if !haveContent {
			errs = append(errs, fieldError{at + ".content", "missing (required: a string)"})
		}
		msgs = append(msgs, m)
	}
	return msgs, errs
}

// asObject turns a decoded object (JSON map, or msgpack map with string or other keys) into
// members sorted by key, so that error order does not depend on map iteration.
func asObject(v any) ([]member, bool) {
	var ms []member
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			ms = append(ms, member{k, val})
		}
	case map[any]any:
		for k, val := range x {
			ms = append(ms, member{fmt.Sprint(k), val})
		}
	default:
		return nil, false
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].key < ms[j].key })
	return ms, true
}

// finish checks what needs the whole trace (unique ids, unique session turns), assigns missing
// ids and sorts by arrival. errf receives each problem.
func finish(reqs []Request, name string, errf func(*LineError) bool) []Request {
	idLine := make(map[string]int, len(reqs))
	type turnKey struct {
		session string
		turn    int
	}
	turnLine := map[turnKey]int{}
	for i := range reqs {
		r := &reqs[i]
		if r.ID == "" {
			r.ID = fmt.Sprintf("r%d", r.Line)
		}
		if first, dup := idLine[r.ID]; dup {
			if !errf(&LineError{File: name, Line: r.Line, Field: fID,
				Reason: fmt.Sprintf("duplicate id %s (first used on line %d; lines without an id get r<line>)", safetext.Quote(r.ID, 64), first)}) {
				return nil
			}
		} else {
			idLine[r.ID] = r.Line
		}
		if r.Session != "" && r.Turn > 0 {
			k := turnKey{r.Session, r.Turn}
			if first, dup := turnLine[k]; dup {
				if !errf(&LineError{File: name, Line: r.Line, Field: fTurn,
					Reason: fmt.Sprintf("duplicate turn %d of session %s (first on line %d)", r.Turn, safetext.Quote(r.Session, 64), first)}) {
					return nil
				}
			} else {
				turnLine[k] = r.Line
			}
		}
	}
	if !resolveAfter(reqs, name, errf) {
		return nil
	}
	SortByArrival(reqs)
	return reqs
}

// SortByArrival sorts requests by Arrival, keeping the file order of equal arrivals.
func SortByArrival(reqs []Request) {
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].Arrival < reqs[j].Arrival })
}

// Duration returns the last arrival (the trace's length from its start at offset 0).
func Duration(reqs []Request) time.Duration {
	var d time.Duration
	for i := range reqs {
		if reqs[i].Arrival > d {
			d = reqs[i].Arrival
		}
	}
	return d
}
