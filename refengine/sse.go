package refengine

import (
	"strconv"
)

// The JSON of OpenAI-compatible responses is written by hand in vLLM's field order (no
// reflection, no per-chunk maps); personality.go frames streamed chunks per wire personality.

func appendHead(b []byte, id, object string, created int64, model string) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"object":`...)
	b = appendJSONString(b, object)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, model)
	return append(b, `,"choices":[`...)
}

// appendUsage appends a usage object; cached >= 0 adds
// "prompt_tokens_details":{"cached_tokens":cached}, the prompt tokens found in the prefix
// cache, as vLLM, SGLang and OpenAI report them.
func appendUsage(b []byte, prompt, cached, completion int) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	if cached >= 0 {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(cached), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

const doneEvent = "data: [DONE]\n\n"

// appendJSONBytes appends generated text as a JSON string. Generated words are ASCII letters
// and spaces, which need no escaping; anything else takes the general path.
func appendJSONBytes(b, text []byte) []byte {
	for _, c := range text {
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return appendJSONString(b, string(text))
		}
	}
	b = append(b, '"')
	b = append(b, text...)
	return append(b, '"')
}

// appendFullResponse appends a non-streaming response.
func appendFullResponse(b []byte, chat bool, id string, created int64, model string, text []byte, finish string, prompt, cached, completion int) []byte {
	if chat {
		b = appendHead(b, id, "chat.completion", created, model)
		b = append(b, `{"index":0,"message":{"role":"assistant","content":`...)
		b = appendJSONBytes(b, text)
		b = append(b, `,"tool_calls":[]},"logprobs":null,"finish_reason":`...)
	} else {
		b = appendHead(b, id, "text_completion", created, model)
		b = append(b, `{"index":0,"text":`...)
		b = appendJSONBytes(b, text)
		b = append(b, `,"logprobs":null,"finish_reason":`...)
	}
	b = appendJSONString(b, finish)
	b = append(b, `,"stop_reason":null}],"usage":`...)
	b = appendUsage(b, prompt, cached, completion)
	return append(b, "}\n"...)
}
