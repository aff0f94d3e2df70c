package refengine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/llmbench/llmbench/tokenizer"
)

// POST /v1/embeddings (OpenAI's embeddings API, as vLLM serves it for a pooling model). Each
// input is a sequence of its own that the scheduler prefills like any prompt (batched, chunked,
// prefix-cached); its embedding is ready when its prefill ends (the step that would emit a
// first token), and the response, one vector per input with usage.prompt_tokens counting them
// all, goes out when the last input's is. Ground truth: input i's timeline is under the
// request's key (X-Request-Id) for i = 0 and key + "/i" after; its first emission is when its
// embedding was ready. Vectors are deterministic in the input text, of the model's hidden
// size unless "dimensions" asks for fewer; encoding_format "float" or "base64"
// (little-endian float32). In /metrics each input counts as a request of one generation
// token (its pooling step).

// maxEmbeddingInputs bounds the inputs of one call (OpenAI accepts 2048).
const maxEmbeddingInputs = 2048

type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

// embedInput is one decoded input.
type embedInput struct {
	ids  []int
	hash uint64
}

// decodeEmbeddings parses and validates an embeddings body. It never panics on any input.
// It returns the inputs, the encoding format and the dimensions.
func decodeEmbeddings(body []byte, lim decodeLimits, hidden int) ([]embedInput, string, int, *apiError) {
	var er embeddingsRequest
	if err := decodeJSONBody(body, &er); err != nil {
		return nil, "", 0, err
	}
	if er.Model != "" && er.Model != lim.servedModel {
		return nil, "", 0, loraNotFound(er.Model) // embeddings run on the base model only
	}
	format, dims, err := embedOptions(&er, hidden)
	if err != nil {
		return nil, "", 0, err
	}
	ins, err := decodeEmbedInputs(er.Input)
	if err != nil {
		return nil, "", 0, err
	}
	for i, in := range ins {
		switch n := len(in.ids); {
		case n == 0:
			return nil, "", 0, badRequest(fmt.Sprintf("input[%d]", i), "input[%d] is empty; send at least one token", i)
		case n >= lim.maxModelLen:
			return nil, "", 0, badRequest(fmt.Sprintf("input[%d]", i), "This model's maximum context length is %d tokens, but input[%d] has %d tokens.", lim.maxModelLen, i, n)
		}
	}
	return ins, format, dims, nil
}

// embedOptions validates encoding_format (default "float") and dimensions (default and at
// most the model's hidden size).
func embedOptions(er *embeddingsRequest, hidden int) (format string, dims int, err *apiError) {
	format = er.EncodingFormat
	switch format {
	case "":
		format = "float"
	case "float", "base64":
	default:
		return "", 0, badRequest("encoding_format", "encoding_format must be \"float\" or \"base64\", got %q", clipText(format, 40))
	}
	dims = hidden
	if er.Dimensions != nil {
		if *er.Dimensions < 1 || *er.Dimensions > hidden {
			return "", 0, badRequest("dimensions", "dimensions must be between 1 and %d, got %d", hidden, *er.Dimensions)
		}
		dims = *er.Dimensions
	}
	return format, dims, nil
}

// decodeEmbedInputs reads input: a string, or an array of 1 to maxEmbeddingInputs strings or
// token id arrays.
func decodeEmbedInputs(input json.RawMessage) ([]embedInput, *apiError) {
	raw := bytes.TrimSpace(input)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, badRequest("input", "`input` is required")
	}
	var tok tokenizer.Reference
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, badRequest("input", "`input` is not a valid JSON string: %v", err)
		}
		return []embedInput{embedText(&tok, s)}, nil
	case '[':
	default:
		return nil, badRequest("input", "`input` must be a string, an array of strings or an array of token id arrays")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badRequest("input", "`input` must be a string, an array of strings or an array of token id arrays: %v", err)
	}
	if len(items) == 0 || len(items) > maxEmbeddingInputs {
		return nil, badRequest("input", "`input` must hold 1 to %d inputs, got %d", maxEmbeddingInputs, len(items))
	}
	ins := make([]embedInput, 0, len(items))
	for i, it := range items {
		in, err := decodeEmbedItem(&tok, i, it)
		if err != nil {
			return nil, err
		}
		ins = append(ins, in)
	}
	return ins, nil
}

// decodeEmbedItem reads input[i]: a string or an array of non-negative token ids.
func decodeEmbedItem(tok *tokenizer.Reference, i int, it json.RawMessage) (embedInput, *apiError) {
	it = bytes.TrimSpace(it)
	if len(it) > 0 && it[0] == '[' {
		var ids []int
		if err := json.Unmarshal(it, &ids); err != nil {
			return embedInput{}, badRequest(fmt.Sprintf("input[%d]", i), "input[%d] must be a string or an array of token ids", i)
		}
		h := uint64(fnvOffset)
		for _, id := range ids {
			if id < 0 {
				return embedInput{}, badRequest(fmt.Sprintf("input[%d]", i), "input[%d] holds a negative token id", i)
			}
			h = hashUint(h, uint64(id))
		}
		return embedInput{ids: ids, hash: h}, nil
	}
	var s string
	if err := json.Unmarshal(it, &s); err != nil {
		return embedInput{}, badRequest(fmt.Sprintf("input[%d]", i), "input[%d] must be a string or an array of token ids", i)
	}
	return embedText(tok, s), nil
}

// embedText is a text input: its reference tokens and its hash.
func embedText(tok *tokenizer.Reference, s string) embedInput {
	return embedInput{ids: tok.Encode(s), hash: hashString(fnvOffset, s)}
}

// handleEmbeddings serves an admitted embeddings request (handleGenerate did the admission).
func (e *Engine) handleEmbeddings(w http.ResponseWriter, r *http.Request, body []byte, key, respID string, plan *faultPlan) {
	ins, format, dims, aerr := decodeEmbeddings(body, e.decodeLimits(), e.cfg.model.Hidden)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	st := newStream()
	seqs := make([]*seq, len(ins))
	prompt := 0
	for i, in := range ins {
		req := &request{model: e.cfg.ServedModelName, promptTokens: len(in.ids), promptIDs: in.ids, promptHash: in.hash,
			maxTokens: 1, minTokens: 1, ignoreEOS: true}
		k := key
		if i > 0 {
			k = key + "/" + strconv.Itoa(i)
		}
		p := *plan
		seqs[i] = e.submit(req, k, respID, &outPlan{base: in.hash}, &p, st)
		prompt += len(in.ids)
	}
	finished := false
	defer func() {
		if !finished {
			for _, s := range seqs {
				e.abort(s)
			}
		}
	}()
	ctx := r.Context()
	if !e.waitFinals(ctx, st, len(ins)) {
		return
	}
	finished = true
	w.Header().Set("X-Request-Id", key)
	w.Header().Set("Content-Type", "application/json")
	w.Write(appendEmbeddings(nil, ins, format, dims, e.cfg.ServedModelName, prompt))
}

// waitFinals waits until n sequences sharing st have finished.
func (e *Engine) waitFinals(ctx context.Context, st *stream, n int) bool {
	var pend []pendingEmit
	done := 0
	for done < n {
		if !e.wait(ctx, st) {
			return false
		}
		pend = st.take(pend)
		for _, p := range pend {
			if p.final {
				done++
			}
		}
	}
	return true
}

// appendEmbeddings appends the response body: {"object":"list","data":[...],"model",
// "usage":{"prompt_tokens","total_tokens"}}.
func appendEmbeddings(b []byte, ins []embedInput, format string, dims int, model string, prompt int) []byte {
	b = append(b, `{"object":"list","data":[`...)
	var f32 []byte
	for i, in := range ins {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"embedding":`...)
		h := in.hash
		if format == "base64" {
			f32 = f32[:0]
			for d := 0; d < dims; d++ {
				h = mix(h)
				f32 = binary.LittleEndian.AppendUint32(f32, math.Float32bits(unitValue(h)))
			}
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, f32)
			b = append(b, '"')
		} else {
			b = append(b, '[')
			for d := 0; d < dims; d++ {
				if d > 0 {
					b = append(b, ',')
				}
				h = mix(h)
				b = strconv.AppendFloat(b, float64(unitValue(h)), 'f', 6, 32)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	b = appendJSONString(b, model)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	return append(b, "}}\n"...)
}

// unitValue maps a hash to [-1, 1).
func unitValue(h uint64) float32 { return float32(int64(h>>11))/float32(1<<52) - 1 }
