package metrics

import (
	"github.com/vmihailenco/msgpack/v5"
)

// Record's msgpack encoding is written by hand: reflection-based decoding of the chunk lists
// dominated the time of every pass over requests.msgpack (a 100,000-request simulation spent
// 14 of its 24 s there).
//
// A Record is a msgpack map from the short field names below to values; a reader skips keys it
// does not know, so fields can be added without breaking old readers. Chunks are one flat
// integer array [t0, n0, t1-t0, n1, t2-t1, n2, ...]: each chunk's time as a delta from the
// previous chunk (the first from 0) followed by its token count.

var (
	_ msgpack.CustomEncoder = (*Record)(nil)
	_ msgpack.CustomDecoder = (*Record)(nil)
)

// recordField is one entry of recordFields: a msgpack key and where its value lives in a
// Record. Exactly one of str, i64, num and calls is set.
type recordField struct {
	key string
	// omitEmpty leaves the key out of a frame when the value is "" or 0.
	omitEmpty bool
	str       func(r *Record) *string
	i64       func(r *Record) *int64
	num       func(r *Record) *int
	// calls is a list of tool calls, written as one flat string array [id0, name0, args0,
	// id1, ...] (always omitted when empty).
	calls func(r *Record) *[]ToolCall
}

// recordFields is Record's encoding, written once: the encoder writes these keys in this order
// (then "chunks"), and the decoder reads them by the same table. TestRecordCodecCoversEveryField
// fills every field of Record by reflection, so a field missing here fails it.
var recordFields = [...]recordField{
	{key: "id", str: func(r *Record) *string { return &r.ID }},
	{key: "class", omitEmpty: true, str: func(r *Record) *string { return &r.Class }},
	{key: "session", omitEmpty: true, str: func(r *Record) *string { return &r.Session }},
	{key: "turn", omitEmpty: true, num: func(r *Record) *int { return &r.Turn }},
	{key: "repeat", omitEmpty: true, num: func(r *Record) *int { return &r.Repeat }},
	{key: "phase", omitEmpty: true, str: func(r *Record) *string { return &r.Phase }},
	{key: "arm", omitEmpty: true, str: func(r *Record) *string { return &r.Arm }},
	{key: "intended", i64: func(r *Record) *int64 { return &r.Intended }},
	{key: "dispatched", i64: func(r *Record) *int64 { return &r.Dispatched }},
	{key: "sent", i64: func(r *Record) *int64 { return &r.Sent }},
	{key: "headers", i64: func(r *Record) *int64 { return &r.Headers }},
	{key: "first_token", i64: func(r *Record) *int64 { return &r.FirstToken }},
	{key: "end", i64: func(r *Record) *int64 { return &r.End }},
	{key: "in", num: func(r *Record) *int { return &r.InputTokens }},
	{key: "out", num: func(r *Record) *int { return &r.OutputTokens }},
	{key: "token_source", str: func(r *Record) *string { return &r.TokenSource }},
	{key: "in_source", omitEmpty: true, str: func(r *Record) *string { return &r.InputSource }},
	{key: "in_intended", omitEmpty: true, num: func(r *Record) *int { return &r.IntendedInputTokens }},
	{key: "attribution", omitEmpty: true, str: func(r *Record) *string { return &r.TokenAttribution }},
	{key: "client_out", omitEmpty: true, num: func(r *Record) *int { return &r.ClientOutputTokens }},
	{key: "requested", num: func(r *Record) *int { return &r.RequestedTokens }},
	{key: "server_in", num: func(r *Record) *int { return &r.ServerInputTokens }},
	{key: "server_out", num: func(r *Record) *int { return &r.ServerOutputTokens }},
	{key: "usage_rejected", omitEmpty: true, str: func(r *Record) *string { return &r.UsageRejected }},
	{key: "reasoning", omitEmpty: true, num: func(r *Record) *int { return &r.ReasoningTokens }},
	{key: "reasoning_chunks", omitEmpty: true, num: func(r *Record) *int { return &r.ReasoningChunks }},
	{key: "first_answer", omitEmpty: true, i64: func(r *Record) *int64 { return &r.FirstAnswer }},
	{key: "cached_in", omitEmpty: true, num: func(r *Record) *int { return &r.CachedInputTokens }},
	{key: "cache_write", omitEmpty: true, num: func(r *Record) *int { return &r.CacheWriteTokens }},
	{key: "cache_source", omitEmpty: true, str: func(r *Record) *string { return &r.CacheSource }},
	{key: "status", num: func(r *Record) *int { return &r.Status }},
	{key: "failure", omitEmpty: true, str: func(r *Record) *string { return (*string)(&r.Failure) }},
	{key: "error", omitEmpty: true, str: func(r *Record) *string { return &r.Error }},
	{key: "error_type", omitEmpty: true, str: func(r *Record) *string { return &r.ErrorType }},
	{key: "error_code", omitEmpty: true, str: func(r *Record) *string { return &r.ErrorCode }},
	{key: "error_prompt", omitEmpty: true, num: func(r *Record) *int { return &r.ErrorPromptTokens }},
	{key: "error_context", omitEmpty: true, num: func(r *Record) *int { return &r.ErrorContextTokens }},
	{key: "output_hash", omitEmpty: true, str: func(r *Record) *string { return &r.OutputHash }},
	{key: "response_id", omitEmpty: true, str: func(r *Record) *string { return &r.ResponseID }},
	// Quality (issue 17).
	{key: "output_text", omitEmpty: true, str: func(r *Record) *string { return &r.OutputText }},
	{key: "tool_calls", omitEmpty: true, calls: func(r *Record) *[]ToolCall { return &r.ToolCalls }},
	{key: "grade", omitEmpty: true, str: func(r *Record) *string { return &r.Grade }},
	{key: "grade_note", omitEmpty: true, str: func(r *Record) *string { return &r.GradeNote }},
	// Agentic sessions.
	{key: "after", omitEmpty: true, str: func(r *Record) *string { return &r.After }},
	// Per-request model (issue 38).
	{key: "model", omitEmpty: true, str: func(r *Record) *string { return &r.Model }},
	{key: "think", omitEmpty: true, i64: func(r *Record) *int64 { return &r.Think }},
	{key: "tool_delay", omitEmpty: true, i64: func(r *Record) *int64 { return &r.ToolDelay }},
	// Speculative decoding as the server reported it (speculative.go).
	{key: "spec_draft", omitEmpty: true, num: func(r *Record) *int { return &r.SpecDraftTokens }},
	{key: "spec_accepted", omitEmpty: true, num: func(r *Record) *int { return &r.SpecAcceptedTokens }},
	{key: "spec_passes", omitEmpty: true, num: func(r *Record) *int { return &r.SpecPasses }},
	{key: "spec_source", omitEmpty: true, str: func(r *Record) *string { return &r.SpecSource }},
}

// chunksKey is the key of the chunk array, written after recordFields.
const chunksKey = "chunks"

// recordFieldIndex finds a recordFields entry by key, for frames whose keys are not in the
// table's order.
var recordFieldIndex = func() map[string]int {
	m := make(map[string]int, len(recordFields))
	for i, f := range recordFields {
		m[f.key] = i
	}
	return m
}()

// value is f's value in r as the encoder writes it: a string, or an integer in num.
func (f *recordField) value(r *Record) (str string, num int64, isStr bool) {
	switch {
	case f.str != nil:
		return *f.str(r), 0, true
	case f.i64 != nil:
		return "", *f.i64(r), false
	case f.calls != nil:
		return "", int64(len(*f.calls(r))), false
	}
	return "", int64(*f.num(r)), false
}

func isZero(s string, v int64, isStr bool) bool {
	if isStr {
		return s == ""
	}
	return v == 0
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (r *Record) EncodeMsgpack(enc *msgpack.Encoder) error {
	n := 1 // chunks
	for i := range recordFields {
		f := &recordFields[i]
		if s, v, isStr := f.value(r); !f.omitEmpty || !isZero(s, v, isStr) {
			n++
		}
	}
	if err := enc.EncodeMapLen(n); err != nil {
		return err
	}
	for i := range recordFields {
		f := &recordFields[i]
		s, v, isStr := f.value(r)
		if f.omitEmpty && isZero(s, v, isStr) {
			continue
		}
		if err := enc.EncodeString(f.key); err != nil {
			return err
		}
		var err error
		if f.calls != nil {
			err = encodeCalls(enc, *f.calls(r))
		} else if isStr {
			err = enc.EncodeString(s)
		} else {
			err = enc.EncodeInt(v)
		}
		if err != nil {
			return err
		}
	}
	if err := enc.EncodeString(chunksKey); err != nil {
		return err
	}
	if err := enc.EncodeArrayLen(2 * len(r.Chunks)); err != nil {
		return err
	}
	var prev int64
	for _, c := range r.Chunks {
		if err := enc.EncodeInt(c.T - prev); err != nil {
			return err
		}
		if err := enc.EncodeInt(int64(c.Tokens)); err != nil {
			return err
		}
		prev = c.T
	}
	return nil
}

// DecodeMsgpack implements msgpack.CustomDecoder: it takes the record's raw bytes and decodes
// them with the same code the records reader uses (unmarshalRecord).
func (r *Record) DecodeMsgpack(dec *msgpack.Decoder) error {
	raw, err := dec.DecodeRaw()
	if err != nil {
		return err
	}
	return unmarshalRecord(raw, r)
}

// encodeCalls writes tool calls as one flat string array.
func encodeCalls(enc *msgpack.Encoder, calls []ToolCall) error {
	if err := enc.EncodeArrayLen(3 * len(calls)); err != nil {
		return err
	}
	for _, c := range calls {
		for _, s := range [3]string{c.ID, c.Name, c.Arguments} {
			if err := enc.EncodeString(s); err != nil {
				return err
			}
		}
	}
	return nil
}
