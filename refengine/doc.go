// Package refengine is the reference engine: a simulated GPU serving engine that speaks the
// OpenAI-compatible streaming API and emits each token at the time a real engine would
// (continuous batching, PagedAttention KV blocks, chunked prefill, prefix caching, speculative
// decoding, quantization, optional prefill/decode disaggregation), with step times from the
// roofline model in refengine/perf. It runs on a real (optionally scaled) clock behind HTTP
// (New, Handler), or on a virtual clock for whole-trace simulation (Simulate), and keeps every
// request's ground-truth timeline so tests can measure the harness's own error.
//
// It must never import loadgen, metrics, reports or traces: it shares only the wire protocol
// (and the reference tokenizer) with the rest of llmbench. It installs no signal handlers,
// reads no environment and touches no global state; clocks and wall time are injected
// through Config.
//
// # Wire format
//
// POST /v1/completions and POST /v1/chat/completions accept the OpenAI request bodies with
// vLLM's extensions: model (Config.ServedModelName or one of Config.LoRAs, lora.go; empty means
// the served name; anything else is vLLM's 404 NotFoundError), prompt (a string, an array of one string, or an array of
// token ids), messages ([{role, content}], content a string or [{type:"text", text}] parts),
// max_tokens or max_completion_tokens, min_tokens, ignore_eos, temperature, seed, n (only 1),
// stream, stream_options.include_usage, stream_options.continuous_usage_stats, and the
// llmbench extension hash_ids (shared-prefix block ids, see "Prefix caching"), and tools,
// tool_choice and response_format (see "Answers"). Other fields are accepted and ignored.
// Without max_tokens a completion generates 16 tokens (the OpenAI and vLLM default) and a chat
// completion Config.DefaultMaxTokens. Content parts may also be images (image_url with a
// data: URL), priced by the model's vision rule (images.go).
//
// POST /v1/responses (OpenAI Responses), POST /v1/messages (Anthropic Messages, with its own
// events and error bodies; the key may come as x-api-key) and POST /v1/embeddings are served
// by the same scheduler (apis.go, embeddings.go); their framings are cited there and written
// by apis_encode.go (one apiFormat per API).
//
// Every streamed response, whatever its API, is written by one stream writer (stream.go:
// writeStreamed and emitLoop, which also injects the mid-stream faults) through a small
// per-API framing (streamFraming): chatStream for chat and completions in the wire
// personality, blockStream for Responses and Messages.
//
// A streamed response is text/event-stream in the wire personality of Config.Wire (see
// personality.go: vllm, sglang, llamacpp, tgi, ollama, openai, each framed as that server
// does, with its source cited). The default, vllm, sends one event per engine emission:
//
//	data: {"id":"cmpl-…","object":"text_completion","created":…,"model":"…","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null,"stop_reason":null}]}
//
//	data: {"id":"chatcmpl-…","object":"chat.completion.chunk","created":…,"model":"…","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}]}
//
// A chat stream starts with a chunk whose delta is {"role":"assistant","content":""}. The last
// content chunk carries "finish_reason" ("length", or "stop" after an injected early end) and
// "stop_reason":null. With continuous_usage_stats every chunk carries
// "usage":{"prompt_tokens","total_tokens","completion_tokens"} (completion tokens so far); with
// include_usage a final chunk with "choices":[] and the usage follows. The stream ends with
// "data: [DONE]". Each event holds all tokens of one engine step for the request: one token
// normally, 1 + accepted drafts under speculative decoding. Non-streaming responses are the
// "text_completion" / "chat.completion" objects with "usage". The response header X-Request-Id
// echoes the request's key.
//
// Errors are OpenAI-style JSON, {"error":{"message","type","param","code"}}: 400 for invalid
// input, naming the field in param (wrong JSON types, max_tokens < 1, prompt + max_tokens over
// the context length, min_tokens > max_tokens, temperature outside [0, 2], n > 1,
// stream_options without stream, batched prompts, non-text content parts), 404 for an unknown
// model, 413 for a body over Config.MaxBodyBytes, 401 for a missing or wrong API key, 429 for
// rate, concurrency or overload limits, 500 for a recovered panic (counted by Panics).
//
// GET /v1/models lists the served model and its LoRA adapters; GET /health answers 200; GET /metrics is Prometheus
// text with vLLM's names (vllm:num_requests_running, vllm:num_requests_waiting,
// vllm:kv_cache_usage_perc, vllm:num_preemptions_total, vllm:prefix_cache_queries_total,
// vllm:prefix_cache_hits_total, vllm:prompt_tokens_total, vllm:generation_tokens_total,
// vllm:spec_decode_num_drafts_total, vllm:spec_decode_num_draft_tokens_total,
// vllm:spec_decode_num_accepted_tokens_total, vllm:request_success_total, and the histograms
// vllm:time_to_first_token_seconds, vllm:inter_token_latency_seconds,
// vllm:e2e_request_latency_seconds, vllm:request_queue_time_seconds,
// vllm:time_per_output_token_seconds in simulated seconds with vLLM's buckets) plus
// llmbench:kv_cache_num_blocks, llmbench:engine_steps_total, llmbench:engine_max_lag_seconds
// (see Engine.MaxLag) and llmbench:faults_injected_total{fault}. GET /version returns Info as JSON (model, GPU, TP,
// dtypes, cache size, scheduler limits, speculative settings, time scale, faults) so that
// comparisons can list configuration differences. The llamacpp, sglang and tgi personalities
// also serve their servers' configuration endpoints (llama.cpp's GET /props and /slots,
// SGLang's /get_server_info and /get_model_info, TGI's /info) in those servers' shapes with
// the engine's limits in their fields (serverinfo.go). With Config.APIKey set, /v1/ paths need
// "Authorization: Bearer <key>" (compared in constant time); the others stay open.
//
// # Tokens and output text
//
// Prompt tokens are counted with tokenizer.Reference: Count(prompt) for a completion, and for a
// chat the sum of Count(content) over the messages, with no chat-template overhead. A token-id
// prompt counts its ids.
//
// Output token i of a request is tokenizer.Word(tokenizer.Mix(base ^ tokenizer.Mix(i))), so the
// whole output is tokenizer.Text(base, 0, n) and every word is exactly one reference token.
// base is Mix(promptHash) for temperature 0 (greedy), Mix(promptHash ^ Mix(seed)) for
// temperature > 0 with a seed, and Mix(promptHash ^ r) otherwise (temperature defaults to 1 as
// in the OpenAI API), r drawn from Config.Seed and the request's X-Request-Id (else its arrival
// number), so that a trace replayed under the same Config.Seed gets the same outputs. promptHash is FNV-1a 64 of the prompt
// text; for chat, of each message's role, a 0 byte, its content and a 1 byte; for token ids,
// of each id's 8 little-endian bytes; in Simulate without text, of the token count, the ID and
// the HashIDs. Greedy output therefore depends only on the prompt: it is identical between
// runs and with speculative decoding on or off. Timeline.OutputSeed records base.
//
// The engine never ends a sequence on its own, except after an answer (see "Answers"): it
// generates exactly max_tokens tokens (finish_reason "length"). min_tokens and ignore_eos
// matter only under the early-eos fault, which stops a request (finish_reason "stop") at a
// length drawn from [max(min_tokens, 1), max_tokens) unless ignore_eos is set, and for answers.
//
// # Answers
//
// A chat request with tools or a response_format, or any request whose prompt asks a question
// the engine can look up, gets an answer instead of words. The answer is text whose reference
// tokens are output tokens like any others (after the reasoning tokens, if any: an answer of k
// tokens follows round(f/(1−f)·k) of them under ReasoningFraction f), so the text streamed
// always counts exactly the completion tokens reported, chunk by chunk. The engine reads the
// prompt text (a chat's message contents, each followed by a newline):
//
//   - Lookup: the last "What is the <thing>?" is answered from the first sentence
//     "The <thing> is <value>." before it: "The <thing> is <value>." (no answer without such a
//     sentence).
//   - Facts: a line "- <label>: <value>" gives the value of a parameter or schema property
//     whose description is the label (else whose name, split into lower-case words, is);
//     "Result of <name>: {…}" gives the JSON object's keys as values by parameter name.
//   - Tools (tool_choice auto, the default, "required" or a named function; "none" answers as
//     without tools): the task is the step "Step N: <phrase>." after as many steps as there are
//     "Result of " texts (no steps: the whole text), and the tool called is the one whose
//     description (without its final period) or name the phrase contains, the longest such;
//     "required" falls back to the first tool, and a task whose steps are all done is answered
//     "All steps are done.". The arguments fill the parameters schema in its order: a required
//     property always (a placeholder of its type when no fact names it), an optional one when a
//     fact does; objects recurse, arrays split the fact at commas. They are written as Python's
//     json.dumps writes them, as vLLM's tool parsers do. An "Error from …" after the last
//     "Result of …" makes the call a retry. The call streams in vLLM's framing in every wire
//     personality: a first delta {"tool_calls":[{"id":"chatcmpl-tool-…","type":"function",
//     "index":0,"function":{"name":…}}]} sent once the name's tokens are complete (a step that
//     completes nothing visible sends no chunk), then {"tool_calls":[{"index":0,"function":
//     {"arguments":"…"}}]} with each step's argument fragment; finish_reason "tool_calls". A
//     whole response has message.content null and message.tool_calls.
//   - response_format: json_schema fills its schema as tool arguments are filled; json_object
//     makes an object of the "- label: value" lines (camelCase keys) or, without any,
//     {"text": "<words>"} sized to max_tokens, so any trace stays valid JSON at its length.
//     "text" is no format.
//
// An answer ends where it ends (finish_reason "stop", or "tool_calls"), within max_tokens (a
// cut answer ends "length"); a text answer is followed by words up to min_tokens, or to
// max_tokens with ignore_eos, but a structured one (JSON, tool calls) is never extended, as a
// grammar-constrained decoder allows nothing after it. Config.Quality is the seeded error model
// that makes answers wrong: see Quality for its formula (rates per task, a U-shaped recall
// curve over the depth of the fact that deepens with the prompt's length, multipliers per
// weight dtype and growth with temperature). A wrong lookup answers another fact's value of
// the same key ("The order number for customer …") or the value with a digit changed; a wrong
// tool call has a wrong parameter name (camelCase and snake_case swapped), a wrong value, a
// missing required parameter, the wrong tool or malformed JSON; a wrong JSON output is
// malformed, has a wrong type or misses a required field. Answers depend on the prompt, the
// request's output seed, the error model and the weight dtype only: greedy answers are
// identical with speculative decoding on or off, and the same request errs the same way on
// every replay. Simulate answers the same way (SimRequest.Tools, ToolChoice, ResponseFormat;
// SimRequest.Output returns the text in SimResult.Outputs).
//
// # Scheduler
//
// One engine step, in the style of vLLM v1: the running requests are visited in admission
// order, each getting the tokens it still needs to compute (the rest of its prompt, or one
// decode token, or 1 + k verify tokens with speculative decoding) up to the step's remaining
// token budget (MaxNumBatchedTokens), so long prompts are prefilled in chunks alongside the
// decodes. Each request holds ceil(tokens/BlockSize) KV blocks, allocated on demand; when none
// is free, the most recently admitted running request is preempted (its blocks freed, its
// progress discarded, put back at the head of the queue to be recomputed, as vLLM's recompute
// preemption does). Then, if nothing was preempted, waiting requests are admitted first come
// first served while the budget lasts and fewer than MaxNumSeqs run. A step's duration is
// perf's roofline over the batch (perf.Work: new tokens, KV read, attention pairs), plus k
// draft passes of the draft model if one is configured; its tokens are emitted when it ends.
// The KV cache holds perf's NumBlocks (or Config.NumBlocks) blocks.
//
// # Prefix caching
//
// Each full prompt block has a chained hash: h_b = Mix(h_(b-1) ^ Mix(content_b)). content_b is
// taken from hash_ids when the request has them (entry j covers prompt tokens
// [j·HashIDTokens, (j+1)·HashIDTokens); a block straddling two entries depends on both, and
// chaining makes an id count only after the same predecessors, as in the Mooncake traces),
// else from the block's token ids, else (Simulate without prompt text) from a value unique to
// the request. Blocks are registered in the cache
// once computed; a new request takes the longest run of cached leading blocks (never its last
// token) and computes only the rest. Freed cached blocks are evicted least recently freed
// first, after all uncached free blocks. Queries and hits are counted in prompt tokens, once
// per request.
//
// # Speculative decoding
//
// With SpecK = k > 0, a decoding request verifies 1 + k tokens per step (fewer near
// max_tokens); each draft is accepted with probability SpecAlpha, left to right, stopping at
// the first rejection, from a generator seeded by the request's seed (or its prompt hash), so
// runs are reproducible. The accepted drafts plus one token are emitted together in one
// chunk; expected tokens per pass are (1 − α^(k+1)) / (1 − α). SpecAlphas gives one α per
// draft position instead.
//
// SpecMethod says who drafts: "free" (the default) costs nothing; "draft" adds the k passes of
// SpecDraftModel's profile to each step; "eagle" k passes of an EAGLE head of the target
// (perf.EAGLEHead); "medusa" one pass of k heads (perf.MedusaHeadParams) and verifies a tree of
// SpecTree candidates, 1 + SpecTree tokens per request; "ngram" costs no GPU time and drafts
// only on the steps where the request's text repeats: with probability ρ, its class's
// SpecRepetition, and then each drafted token is accepted with probability ρ. The formulas,
// and why the benefit shrinks as the batch grows, are in perf's documentation ("Speculative
// methods"). Every method emits the same text; only the timing differs.
//
// # Disaggregation
//
// With Disaggregated, a prefill pool and a decode pool, each a full copy of the GPU setup,
// step independently: a request is prefilled (and gets its first token) in the first, its KV
// cache moves to the second in tokens × KV bytes / KVTransferBW, and it decodes there.
//
// # Replicas
//
// SimulateCluster runs ClusterOptions.Replicas independent engines of one Config on one
// virtual timeline, each request routed at its arrival by ClusterOptions.Router (see Routers:
// round-robin, least-loaded, or prefix-aware as llm-d's inference scheduler scores replicas,
// with a load guard). Simulate is its one-replica case. ClusterResult says where each request
// went and what each replica did (ReplicaStats); OnFinish sees each finished request and can
// stop the simulation, as `llmbench plan` does once a deployment cannot meet its target.
//
// # Clocks and ground truth
//
// All engine times are simulated offsets from an epoch. The HTTP engine runs on a ScaledClock
// (Config.TimeScale: 2 runs twice as fast as the GPU would) or on any Clock given in
// Config.Clock; Simulate uses virtual time and never sleeps. The HTTP engine's simulated time
// follows the priced schedule exactly (a step starting at t ends at t + its duration); the
// clock only paces the scheduler, which sleeps until the wall time of the next event and runs
// overdue steps back to back, so a token is never sent before its ground-truth time and is
// late by at most the OS timer's granularity (about a millisecond of wall time). When idle,
// the engine's time catches up with the clock. Fault durations (stall, slow-headers) are
// simulated time too. Engine.Timeline(id) returns the ground truth of a
// request keyed by its X-Request-Id header (else its response id): arrival, first scheduled
// step, every emission (simulated offset and token count; Timeline.Wall gives wall time),
// finish, prompt/output/cached tokens, preemptions, speculative counts, KV transfer time, and
// for streams the time each chunk had been flushed to the connection (Timeline.Sent).
// The engine keeps in-flight timelines and the last TimelineCapacity finished ones.
//
// # Faults
//
// Config.Faults (ParseFaults: "reset-mid=0.1,status-503=0.1,stall=0.1:500ms,malformed=0.05")
// injects, per request with the given probability drawn from the fault seed and the request's
// key: reset-before (TCP reset before headers), status-429/500/503 (OpenAI error bodies),
// slow-headers=p:d, reset-mid, stall=p:d, malformed (one non-SSE line), bad-json (one
// truncated JSON chunk), no-done (no [DONE]), early-eos; overload=N answers 429 while more than
// N requests wait; from=D and until=D confine the faults to requests arriving in that window of
// simulated time (an outage), and seed=N seeds the draws. Mid-stream faults fire once, at a point drawn uniformly over the output,
// and apply to streamed responses only. Simulate applies early-eos alone.
//
// # Noise
//
// Config.Noise (ParseNoise: "jitter=2%,drift=1%:20s,pause=0.5%:20ms", or the preset
// "realistic") makes step times vary as a real server's do, so that runs of one trace differ
// the way real runs differ: each step's priced time is multiplied by a lognormal factor of mean
// 1 and relative spread jitter, and by exp(drift·D(t)), where D is a smooth curve through
// standard normal knots one drift period apart in simulated time (its level at the start is
// random, so whole runs differ); a pause share of steps is followed by the pause duration.
// Draws are keyed by the noise seed (else Config.Seed), the pool and the step number, so a
// Simulate stays deterministic for a given seed. The zero Noise changes nothing.
//
// # Configuration
//
// Every Config field is documented on the type; the zero value of each selects its default
// (Llama 3.1 8B, bf16, one H100 SXM, gpu memory utilization 0.9, block size 16, 256 sequences,
// 8,192 batched tokens, prefix caching on, no speculation, time scale 1).
//
// # API
//
// refengine is a supported Go API for embedding the engine in a program or a test: New,
// Handler, Simulate, SimulateCluster, Engine.Timeline (ground truth), Engine.Panics, OutputText
// (the output a greedy or seeded request without an answer will get), the clocks
// (NewVirtualClock, NewScaledClock), Config, Quality (ParseQuality, DefaultQuality) and Output.
// The wire format it serves is the OpenAI-compatible API, not this package. docs/ARCHITECTURE.md
// explains how its timelines become Records (runner/engineadapter).
package refengine
