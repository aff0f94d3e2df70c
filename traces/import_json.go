package traces

import (
	"github.com/llmbench/llmbench/internal/safetext"

	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/tokenizer"
)

// Mooncake JSONL: one object per line with timestamp (milliseconds), input_length,
// output_length and hash_ids (one id per 512-token block of the prompt). Other fields are
// ignored.
func importMooncake(r io.Reader, name string, opts ImportOptions) ([]Request, error) {
	sink := &rowSink{name: name, opts: opts}
	br := bufio.NewReaderSize(r, 64<<10)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read %s: line %d: %w", name, lineNo, err)
		}
		atEOF := err == io.EOF
		trimmed := bytes.TrimSpace(bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")))
		if len(trimmed) > 0 {
			more, err := mooncakeLine(sink, trimmed, lineNo, !atEOF)
			if err != nil {
				return nil, err
			}
			if !more {
				break
			}
		}
		if atEOF {
			break
		}
	}
	rebase(sink.reqs)
	return sink.reqs, nil
}

func mooncakeLine(sink *rowSink, line []byte, lineNo int, complete bool) (bool, error) {
	ms, err := parseObject(line)
	if err != nil {
		reason := err.Error()
		if errors.Is(err, io.ErrUnexpectedEOF) {
			reason = "incomplete JSON object"
			if !complete {
				reason = "the last line is cut short (was the file truncated?)"
			}
		}
		return true, sink.bad(lineNo, "", reason)
	}
	vals := map[string]any{}
	for _, m := range ms {
		vals[m.key] = m.val
	}
	req := Request{ID: "r" + strconv.Itoa(lineNo), Class: sink.opts.Class, Line: lineNo}
	v, ok := vals["timestamp"]
	if !ok {
		return true, sink.bad(lineNo, "timestamp", "missing")
	}
	ts, ok := asNumber(v)
	if !ok || math.IsNaN(ts.f) || math.Abs(ts.f) > maxSeconds*1000 {
		return true, sink.bad(lineNo, "timestamp", "must be a number of milliseconds (got "+describe(v)+")")
	}
	req.Arrival = time.Duration(math.Round(ts.f * 1e6))
	if v, ok = vals["input_length"]; !ok {
		return true, sink.bad(lineNo, "input_length", "missing")
	}
	in, why := intField(v, 1, "must be an integer >= 1")
	if why != "" {
		return true, sink.bad(lineNo, "input_length", why)
	}
	if v, ok = vals["output_length"]; !ok {
		return true, sink.bad(lineNo, "output_length", "missing")
	}
	out, why := intField(v, 0, "must be an integer >= 1")
	if why != "" {
		return true, sink.bad(lineNo, "output_length", why)
	}
	if out == 0 {
		return true, sink.failed(lineNo, "output_length")
	}
	req.InputTokens, req.OutputTokens = int(min(in, MaxTokens+1)), int(min(out, MaxTokens+1))
	if v, ok := vals["hash_ids"]; ok && v != nil {
		ids, ferrs := decodeHashIDs(v)
		if len(ferrs) > 0 {
			return true, sink.bad(lineNo, ferrs[0].field, ferrs[0].reason)
		}
		req.HashIDs = ids
	}
	return sink.add(req), nil
}

// shareGPTTurn is one message of a ShareGPT conversation ({"from","value"}, or the
// {"role","content"} spelling some copies use).
type shareGPTTurn struct {
	From    string `json:"from"`
	Value   string `json:"value"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

type shareGPTItem struct {
	ID            any            `json:"id"`
	Conversations []shareGPTTurn `json:"conversations"`
	Conversation  []shareGPTTurn `json:"conversation"`
	Messages      []shareGPTTurn `json:"messages"`
}

func shareGPTRole(from string) string {
	switch strings.ToLower(strings.TrimSpace(from)) {
	case "human", "user":
		return "user"
	case "gpt", "chatgpt", "assistant", "bard", "bing", "model":
		return "assistant"
	case "system":
		return "system"
	}
	return ""
}

// ShareGPT JSON: an array of {"id", "conversations": [{"from": "human"|"gpt"|"system",
// "value": text}, ...]}. The file is read whole into memory.
func importShareGPT(r io.Reader, name string, opts ImportOptions) ([]Request, error) {
	opts, err := shareGPTOptions(opts)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	lines := lineCounter{data: data, line: 1}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, &LineError{File: name, Line: lines.at(errorOffset(err, len(data))), Reason: "invalid JSON: " + err.Error(), Err: err}
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, &LineError{File: name, Line: 1, Reason: "a ShareGPT file must be a JSON array of conversations"}
	}
	sink := &rowSink{name: name, opts: opts}
	src := rand.NewPCG(uint64(opts.Seed), 0x54a4e9) // its bit stream is specified: stable gaps
	var at time.Duration
	conv := 0
	for dec.More() {
		start := skipSep(data, int(dec.InputOffset()))
		line := lines.at(start)
		var item shareGPTItem
		if err := dec.Decode(&item); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				// The value was consumed; the conversation is malformed but the array goes on.
				if err := sink.bad(line, te.Field, "has the wrong type ("+te.Value+")"); err != nil {
					return nil, err
				}
				continue
			}
			return nil, &LineError{File: name, Line: lines.at(errorOffset(err, len(data))), Reason: "invalid JSON: " + err.Error(), Err: err}
		}
		turns := item.turns()
		if turns == nil {
			if err := sink.bad(line, "conversations", "missing (expected an array of {\"from\",\"value\"} turns)"); err != nil {
				return nil, err
			}
			continue
		}
		reqs, why := shareGPTRequests(turns, opts, conv)
		if why != "" {
			sink.skip(line, why)
			continue
		}
		conv++
		if !addConversation(sink, reqs, at, line, opts.Think) {
			break
		}
		at += shareGPTGap(src, opts)
	}
	return sink.reqs, nil
}

// shareGPTOptions fills in the ShareGPT importer's defaults (the reference tokenizer, 1
// conversation/s, 10 s of think time) and checks the rate and think time.
func shareGPTOptions(opts ImportOptions) (ImportOptions, error) {
	if opts.Tokenizer == nil {
		opts.Tokenizer = tokenizer.Reference{}
	}
	if opts.Rate == 0 {
		opts.Rate = 1
	}
	if !(opts.Rate > 0) || math.IsInf(opts.Rate, 0) {
		return opts, fmt.Errorf("import sharegpt: rate must be a finite number > 0 (got %v)", opts.Rate)
	}
	if opts.Think == 0 {
		opts.Think = 10 * time.Second
	}
	if opts.Think < 0 {
		return opts, fmt.Errorf("import sharegpt: think time must be >= 0 (got %v)", opts.Think)
	}
	return opts, nil
}

// turns are the conversation's turns under whichever key the file uses: conversations,
// conversation or messages (nil when none).
func (it *shareGPTItem) turns() []shareGPTTurn {
	if it.Conversations != nil {
		return it.Conversations
	}
	if it.Conversation != nil {
		return it.Conversation
	}
	return it.Messages
}

// addConversation hands a conversation's requests, read at line, to the sink: the first
// arriving at at, each later one think after the one before. It returns false when the sink
// wants no more.
func addConversation(sink *rowSink, reqs []Request, at time.Duration, line int, think time.Duration) bool {
	for k := range reqs {
		reqs[k].Arrival = at + time.Duration(k)*think
		reqs[k].Line = line
		if k > 0 {
			reqs[k].Think = think
		}
	}
	for _, q := range reqs {
		if !sink.add(q) {
			return false
		}
	}
	return true
}

// shareGPTGap is the time from one conversation's start to the next's: 1/rate, or with
// opts.Poisson an exponential gap of mean 1/rate drawn from src.
func shareGPTGap(src *rand.PCG, opts ImportOptions) time.Duration {
	gap := 1 / opts.Rate
	if opts.Poisson {
		u := (float64(src.Uint64()>>11) + 0.5) / (1 << 53) // uniform in (0, 1)
		gap = -math.Log(u) / opts.Rate
	}
	return time.Duration(math.Round(gap * 1e9))
}

// shareGPTRequests turns one conversation into its request(s), or says why it is unusable.
func shareGPTRequests(turns []shareGPTTurn, opts ImportOptions, conv int) ([]Request, string) {
	var history []Message
	var reqs []Request
	tok := opts.Tokenizer
	for i := 0; i < len(turns); i++ {
		t := turns[i]
		from, text := t.From, t.Value
		if from == "" {
			from, text = t.Role, t.Content
		}
		role := shareGPTRole(from)
		if role == "" {
			return nil, fmt.Sprintf("conversation turn %d has an unknown speaker %s", i, safetext.Quote(from, 40))
		}
		if role != "user" {
			history = append(history, Message{Role: role, Content: text})
			continue
		}
		// A user turn makes a request when an assistant reply follows it.
		if i+1 >= len(turns) {
			break
		}
		next := turns[i+1]
		nfrom, reply := next.From, next.Value
		if nfrom == "" {
			nfrom, reply = next.Role, next.Content
		}
		if shareGPTRole(nfrom) != "assistant" {
			history = append(history, Message{Role: role, Content: text})
			continue
		}
		out := tok.Count(reply)
		msgs := append(append([]Message(nil), history...), Message{Role: "user", Content: text})
		req := Request{OutputTokens: out, Class: opts.Class}
		if opts.Chat || opts.Sessions {
			req.Messages = msgs
			for _, m := range msgs {
				req.InputTokens += tok.Count(m.Content)
			}
		} else {
			req.Prompt = text
			req.InputTokens = tok.Count(text)
		}
		if req.InputTokens >= 1 && req.OutputTokens >= 1 {
			reqs = append(reqs, req)
		} else if !opts.Sessions {
			return nil, "the first user turn or its reply is empty"
		}
		if !opts.Sessions {
			break
		}
		history = append(msgs, Message{Role: "assistant", Content: reply})
		i++
	}
	if len(reqs) == 0 {
		return nil, "no user turn followed by a non-empty assistant reply"
	}
	for k := range reqs {
		if opts.Sessions {
			reqs[k].ID = fmt.Sprintf("c%d-t%d", conv+1, k+1)
			reqs[k].Session = fmt.Sprintf("c%d", conv+1)
			reqs[k].Turn = k + 1
		} else {
			reqs[k].ID = fmt.Sprintf("c%d", conv+1)
		}
	}
	return reqs, ""
}

// lineCounter maps increasing byte offsets to 1-based line numbers in O(total) time.
type lineCounter struct {
	data []byte
	pos  int
	line int
}

func (c *lineCounter) at(off int) int {
	off = min(off, len(c.data))
	if off < c.pos { // offsets normally only grow; recount if not
		c.pos, c.line = 0, 1
	}
	c.line += bytes.Count(c.data[c.pos:off], []byte("\n"))
	c.pos = off
	return c.line
}

// skipSep returns the offset of the next value after whitespace and a comma.
func skipSep(data []byte, off int) int {
	for off < len(data) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ',':
			off++
		default:
			return off
		}
	}
	return off
}

// errorOffset is where a JSON decoding error happened: the syntax error's offset, or the end of
// the input for an unexpected end.
func errorOffset(err error, end int) int {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return int(se.Offset)
	}
	return end
}
