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

// EncodeMsgpack implements msgpack.CustomEncoder.
func (r *Record) EncodeMsgpack(enc *msgpack.Encoder) error {
	type kv struct {
		key  string
		str  string
		num  int64
		kind byte // 's' string, 'i' int
		omit bool
	}
	fields := [...]kv{
		{key: "id", str: r.ID, kind: 's'},
		{key: "class", str: r.Class, kind: 's', omit: r.Class == ""},
		{key: "session", str: r.Session, kind: 's', omit: r.Session == ""},
		{key: "turn", num: int64(r.Turn), kind: 'i', omit: r.Turn == 0},
		{key: "repeat", num: int64(r.Repeat), kind: 'i', omit: r.Repeat == 0},
		{key: "phase", str: r.Phase, kind: 's', omit: r.Phase == ""},
		{key: "arm", str: r.Arm, kind: 's', omit: r.Arm == ""},
		{key: "intended", num: r.Intended, kind: 'i'},
		{key: "dispatched", num: r.Dispatched, kind: 'i'},
		{key: "sent", num: r.Sent, kind: 'i'},
		{key: "headers", num: r.Headers, kind: 'i'},
		{key: "first_token", num: r.FirstToken, kind: 'i'},
		{key: "end", num: r.End, kind: 'i'},
		{key: "in", num: int64(r.InputTokens), kind: 'i'},
		{key: "out", num: int64(r.OutputTokens), kind: 'i'},
		{key: "token_source", str: r.TokenSource, kind: 's'},
		{key: "attribution", str: r.TokenAttribution, kind: 's', omit: r.TokenAttribution == ""},
		{key: "client_out", num: int64(r.ClientOutputTokens), kind: 'i', omit: r.ClientOutputTokens == 0},
		{key: "requested", num: int64(r.RequestedTokens), kind: 'i'},
		{key: "server_in", num: int64(r.ServerInputTokens), kind: 'i'},
		{key: "server_out", num: int64(r.ServerOutputTokens), kind: 'i'},
		{key: "usage_rejected", str: r.UsageRejected, kind: 's', omit: r.UsageRejected == ""},
		{key: "reasoning", num: int64(r.ReasoningTokens), kind: 'i', omit: r.ReasoningTokens == 0},
		{key: "reasoning_chunks", num: int64(r.ReasoningChunks), kind: 'i', omit: r.ReasoningChunks == 0},
		{key: "first_answer", num: r.FirstAnswer, kind: 'i', omit: r.FirstAnswer == 0},
		{key: "status", num: int64(r.Status), kind: 'i'},
		{key: "failure", str: string(r.Failure), kind: 's', omit: r.Failure == ""},
		{key: "error", str: r.Error, kind: 's', omit: r.Error == ""},
		{key: "output_hash", str: r.OutputHash, kind: 's', omit: r.OutputHash == ""},
		{key: "response_id", str: r.ResponseID, kind: 's', omit: r.ResponseID == ""},
	}
	n := 1 // chunks
	for _, f := range fields {
		if !f.omit {
			n++
		}
	}
	if err := enc.EncodeMapLen(n); err != nil {
		return err
	}
	for _, f := range fields {
		if f.omit {
			continue
		}
		if err := enc.EncodeString(f.key); err != nil {
			return err
		}
		var err error
		if f.kind == 's' {
			err = enc.EncodeString(f.str)
		} else {
			err = enc.EncodeInt(f.num)
		}
		if err != nil {
			return err
		}
	}
	if err := enc.EncodeString("chunks"); err != nil {
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
