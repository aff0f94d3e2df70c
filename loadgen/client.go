package loadgen

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/llmbench/llmbench/internal/redact"
	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// Causes a request's context is canceled with; they decide the failure kind.
var (
	errTimeoutFirst = errors.New("no generated token within the first-token timeout")
	errTimeoutIdle  = errors.New("stream silent longer than the idle timeout")
	errTimeoutTotal = errors.New("request longer than the total timeout")
	errInterrupted  = errors.New("canceled: run interrupted and the grace period ended")
	errDrain        = errors.New("the server kept the response open after [DONE]")
	errRedirectLoop = errors.New("redirect loop: stopped after 10 redirects")
	errRedirectHost = errors.New("redirect to another host not followed (the custom headers and API key are for the target's host only)")
)

// maxErrorBody bounds how much of an error response is read; maxJSONBody a non-streaming
// response.
const (
	maxErrorBody = 64 << 10
	maxJSONBody  = 64 << 20
	// readerSize is the SSE reader's buffer, transportReadBuf and transportWriteBuf the
	// transport's buffers of each connection: sized to SSE lines (a few hundred bytes) and
	// request headers, not to throughput, because every open stream holds them
	// (BENCHMARKS.md, "Memory per stream"). Longer lines are assembled in the reader's own
	// buffer; reads and writes larger than a buffer bypass it.
	readerSize        = 2 << 10
	transportReadBuf  = 2 << 10
	transportWriteBuf = 1 << 10
	drainLimit        = 64 << 10
	drainTimeout      = time.Second
	// maxHeaderBytes bounds a response's headers (net/http's default is 1 MiB).
	maxHeaderBytes = 64 << 10
	// maxResponseID bounds the response id kept in a record, in bytes ("…" included).
	maxResponseID = 128
	// maxRawID is how much of a response id is copied before redaction and the cut to
	// maxResponseID (long enough that no secret straddling it survives the cut).
	maxRawID = 16 << 10
)

// client sends requests to one target and turns responses into Records.
type client struct {
	hc      *http.Client
	tr      *http.Transport
	base    string // scheme://host[:port][/prefix], without a trailing /v1
	query   string // the target URL's query, appended to every endpoint
	target  Target
	ext     extensions
	model   string
	tok     tokenizer.Tokenizer
	clock   Clock
	start   time.Time
	redact  *redact.Policy
	maxLine int
	bufs    sync.Pool // *streamBufs
	images  imageCache

	// closeIdle closes the idle connections of the transport in use (HTTP/1.1 or HTTP/2).
	closeIdle func()
	conns     atomic.Int64 // connections dialed by the built-in dialer
}

type streamBufs struct {
	sr      *sseReader
	scratch []byte
}

func newClient(t Target, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*client, error) {
	base, err := normalizeBase(t.URL)
	if err != nil {
		return nil, err
	}
	ext, err := backendExtensions(t.Backend)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	if !validHeaderName(t.SessionHeader) {
		return nil, fmt.Errorf("session header %s: not a valid HTTP header name (letters, digits and !#$%%&'*+-.^_`|~)", safetext.Quote(t.SessionHeader, 64))
	}
	switch t.API {
	case "", "completions", "chat":
	case "responses", "messages", "embeddings":
		// The extensions are fields of OpenAI's completions and chat bodies.
		ext = extensions{}
	default:
		return nil, fmt.Errorf("target API %q: want completions, chat, responses, messages, embeddings or empty (per request)", t.API)
	}
	tlsConf := &tls.Config{InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CACertFile != "" {
		pem, err := os.ReadFile(t.CACertFile)
		if err != nil {
			return nil, fmt.Errorf("CA certificate file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA certificate file %s: no PEM certificate found; give a PEM-encoded CA", t.CACertFile)
		}
		tlsConf.RootCAs = pool
	}
	c := &client{}
	if dial == nil {
		dial = c.dialer(t)
	} else if len(t.SourceAddrs) > 0 {
		return nil, errors.New("target: source addresses need the built-in TCP dialer (Options.Dial was given)")
	}
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would sit inside every measured latency
		DialContext:            dial,
		TLSClientConfig:        tlsConf,
		ForceAttemptHTTP2:      strings.HasPrefix(base, "https:"),
		MaxIdleConns:           0,
		MaxIdleConnsPerHost:    1 << 16,
		MaxConnsPerHost:        0,
		IdleConnTimeout:        90 * time.Second,
		DisableCompression:     true, // compressed SSE would delay and batch chunks
		TLSHandshakeTimeout:    t.Timeouts.Connect,
		ExpectContinueTimeout:  0,
		WriteBufferSize:        transportWriteBuf,
		ReadBufferSize:         transportReadBuf,
		MaxResponseHeaderBytes: maxHeaderBytes,
	}
	c.hc = &http.Client{Transport: tr, CheckRedirect: checkRedirect}
	c.closeIdle = tr.CloseIdleConnections
	if t.HTTP2 {
		h2 := c.http2Transport(strings.HasPrefix(base, "https:"), tlsConf, dial)
		c.hc.Transport, c.closeIdle = h2, h2.CloseIdleConnections
	}
	c.tr, c.base, c.target, c.ext, c.maxLine = tr, base, t, ext, t.MaxLineBytes
	c.redact = redact.New(redact.Target{URL: t.URL, APIKey: t.APIKey, Headers: t.Headers})
	if c.maxLine <= 0 {
		c.maxLine = DefaultMaxLineBytes
	}
	c.query = urlQuery(t.URL)
	c.bufs.New = func() any { return &streamBufs{sr: newSSEReader(nil, readerSize)} }
	return c, nil
}

// checkRedirect follows a redirect on the target's own host (scheme and host:port), up to 10;
// a redirect to another host is not followed, since the custom headers would go with it.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errRedirectLoop
	}
	if req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
		return errRedirectHost
	}
	return nil
}

func (c *client) close() { c.closeIdle() }

// normalizeBase accepts http(s)://host[:port][/prefix][/v1][/][?query] and returns it without
// the trailing /v1, slash, credentials and query.
func normalizeBase(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("target URL %s: want http://host:port or https://host (optionally ending in /v1)", safetext.Quote(redact.URL(raw), 200))
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	s := strings.TrimRight(u.String(), "/")
	s = strings.TrimSuffix(s, "/v1")
	return s, nil
}

// urlQuery returns the query of the target URL ("?api-version=..." for some hosted APIs), to
// be appended to every endpoint. Its values are secrets (see internal/redact).
func urlQuery(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" {
		return ""
	}
	return "?" + u.RawQuery
}

// scrub removes every secret from a message, escapes its control characters and truncates it.
func (c *client) scrub(msg string) string {
	return metrics.TruncateError(safetext.Escape(c.redact.String(msg), 4*metrics.MaxErrorLen))
}

func (c *client) header(h http.Header) {
	for k, v := range c.target.Headers {
		h.Set(k, v)
	}
	if c.target.API == "messages" {
		// Anthropic's Messages API takes the key in x-api-key and needs a version header.
		if c.target.APIKey != "" {
			h.Set("X-Api-Key", c.target.APIKey)
		}
		if h.Get("Anthropic-Version") == "" {
			h.Set("Anthropic-Version", anthropicVersion)
		}
		return
	}
	if c.target.APIKey != "" {
		h.Set("Authorization", "Bearer "+c.target.APIKey)
	}
}

func (c *client) since(t time.Time) int64 { return t.Sub(c.start).Nanoseconds() }
func (c *client) now() int64              { return c.since(c.clock.Now()) }

// call is one request on the wire.
type call struct {
	// intendedInput is the trace's input_tokens a synthesized prompt was sized to (0: the
	// trace gave the text); inputCounted says inputTokens is the client tokenizer's count.
	intendedInput int
	inputCounted  bool
	requestID     string
	chat          bool
	api           string   // responses, messages or embeddings (api.go); "" for completions and chat
	inputs        []string // embeddings: the batch's inputs
	prompt        string
	messages      []traces.Message
	maxTokens     int
	temperature   *float64
	seed          *int64
	keepText      bool // return the output text (multi-turn sessions need it)
	inputTokens   int  // the client's prompt count when it differs from the trace's (0: trace)
	body          []byte
	bodyErr       error
	waiting       bool // counted among the dispatched requests not yet sent (Progress.Waiting, MaxWaiting)

	// Quality (issue 17): capture keeps the answer text and tool calls in the record; tools,
	// toolChoice and responseFormat are the trace's, sent as is (chat only).
	capture                           bool
	tools, toolChoice, responseFormat json.RawMessage
	// natural sends neither ignore_eos nor min_tokens (traces.Request.NaturalEnd).
	natural bool

	// Agentic sessions: the session-affinity key (sent in Target.SessionHeader), and what the
	// record says about the turn's wait: the dependency whose end released it, and the think
	// and tool delays (ns, rate-scaled) it waited after that.
	affinity        string
	after           string
	think, toolWait int64

	// Per-request model (issue 38): the trace's model name, "" for the run's.
	model string
	// Cancellations (cancel.go): the client cancels the request cancelAfter after sending it
	// (0: never); cancelShown is the delay as the trace gave it, for the record's message.
	cancelAfter, cancelShown time.Duration
}

// modelOf is the model name k is sent to: the trace line's, else the run's.
func (c *client) modelOf(k *call) string {
	if k.model != "" {
		return k.model
	}
	return c.model
}

type streamOptions struct {
	IncludeUsage         bool `json:"include_usage,omitempty"`
	ContinuousUsageStats bool `json:"continuous_usage_stats,omitempty"`
}

type wireBody struct {
	Model         string           `json:"model"`
	Prompt        string           `json:"prompt,omitempty"`
	Messages      []wireMessageOut `json:"messages,omitempty"`
	MaxTokens     int              `json:"max_tokens"`
	MinTokens     int              `json:"min_tokens,omitempty"`
	IgnoreEOS     bool             `json:"ignore_eos,omitempty"`
	Stream        bool             `json:"stream"`
	StreamOptions *streamOptions   `json:"stream_options,omitempty"`
	Temperature   *float64         `json:"temperature,omitempty"`
	Seed          *int64           `json:"seed,omitempty"`

	// Quality (issue 17), chat only.
	Tools          json.RawMessage `json:"tools,omitempty"`
	ToolChoice     json.RawMessage `json:"tool_choice,omitempty"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
}

func (c *client) body(k *call) ([]byte, error) {
	if k.api != "" {
		return c.apiBody(k)
	}
	w := wireBody{
		Model:       c.modelOf(k),
		MaxTokens:   k.maxTokens,
		Stream:      c.target.Stream,
		Temperature: k.temperature,
		Seed:        k.seed,
	}
	if k.chat {
		var err error
		if w.Messages, err = c.wireMessages("chat", k.messages); err != nil {
			return nil, err
		}
		w.Tools, w.ToolChoice, w.ResponseFormat = k.tools, k.toolChoice, k.responseFormat
	} else {
		w.Prompt = k.prompt
	}
	if c.ext.ignoreEOS && !k.natural {
		w.IgnoreEOS = true
	}
	if c.ext.minTokens && !k.natural {
		w.MinTokens = k.maxTokens
	}
	if c.target.Stream && (c.ext.includeUsage || c.ext.continuousUsage) {
		w.StreamOptions = &streamOptions{IncludeUsage: c.ext.includeUsage, ContinuousUsageStats: c.ext.continuousUsage}
	}
	return json.Marshal(&w)
}

// idleWatch is the idle timeout of a stream. A chunk of text only stores its time (touch);
// the timer is not reset per token (a timer-heap operation, ≈ 80 ns, 200,000 times a second
// with 20,000 streams at 10 tok/s). When it fires it re-arms itself for what is left since
// the last text, and cancels the request only when a whole Idle has passed without any.
type idleWatch struct {
	mu     sync.Mutex
	t      *time.Timer // nil once stopped
	d      time.Duration
	last   atomic.Int64 // client time (ns from the run epoch) of the last generated text
	now    func() int64
	cancel context.CancelCauseFunc
}

func startIdle(d time.Duration, now func() int64, cancel context.CancelCauseFunc) *idleWatch {
	w := &idleWatch{d: d, now: now, cancel: cancel}
	w.last.Store(now())
	w.mu.Lock()
	w.t = time.AfterFunc(d, w.fire)
	w.mu.Unlock()
	return w
}

func (w *idleWatch) touch(t int64) { w.last.Store(t) }

func (w *idleWatch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.t == nil {
		return
	}
	if left := w.d - time.Duration(w.now()-w.last.Load()); left > 0 {
		w.t.Reset(left)
		return
	}
	w.cancel(errTimeoutIdle)
}

func (w *idleWatch) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.t != nil {
		w.t.Stop()
		w.t = nil
	}
}

func arm(d time.Duration, cancel context.CancelCauseFunc, cause error) *time.Timer {
	if d <= 0 {
		return nil
	}
	return time.AfterFunc(d, func() { cancel(cause) })
}

// newRequest is k's HTTP request on ctx: the POST of its encoded body to the API's path,
// with the target's headers, the request id and the session affinity header.
func (c *client) newRequest(ctx context.Context, k *call) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+apiPath(k.api, k.chat)+c.query, bytes.NewReader(k.body))
	if err != nil {
		return nil, err
	}
	c.header(req.Header)
	req.Header.Set("Content-Type", "application/json")
	if c.target.Stream && k.api != "embeddings" {
		req.Header.Set("Accept", "text/event-stream")
	}
	if k.requestID != "" {
		req.Header.Set("X-Request-Id", k.requestID)
	}
	if c.target.SessionHeader != "" && k.affinity != "" {
		req.Header.Set(c.target.SessionHeader, k.affinity)
	}
	return req, nil
}

// execute sends one request and fills rec from Sent on. It returns the generated text when
// k.keepText is set.
func (c *client) execute(parent context.Context, k *call, rec *metrics.Record) string {
	rec.RequestedTokens = k.maxTokens
	rec.ServerInputTokens, rec.ServerOutputTokens = -1, -1
	if k.bodyErr != nil {
		rec.Sent = c.now()
		rec.End = rec.Sent
		c.fail(rec, metrics.FailMalformed, "encoding the request body: "+k.bodyErr.Error())
		return ""
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	req, err := c.newRequest(ctx, k)
	if err != nil {
		rec.Sent = c.now()
		rec.End = rec.Sent
		c.fail(rec, metrics.FailConnect, err.Error())
		return ""
	}
	tm := &timers{}
	defer tm.stop()
	rec.Sent = c.now()
	// A non-streaming response's headers come with the whole generation: there the
	// first-token timeout bounds the wait for them (phases.go).
	streamed := c.target.Stream && k.api != "embeddings"
	tm.start(c.target.Timeouts, streamed, cancel)
	tm.user = armCancel(k.cancelAfter, k.cancelShown, cancel)

	resp, err := c.hc.Do(tm.traced(req))
	if err != nil {
		rec.End = c.now()
		kind, msg := c.classify(ctx, err, metrics.FailConnect)
		c.fail(rec, kind, msg)
		return ""
	}
	defer resp.Body.Close()
	if !tm.headersIn() {
		// A connect or headers timeout fired while the headers were on their way (its cancel
		// lost the race with them): the timeout stands, and the late response is not recorded.
		<-ctx.Done() // the timer that won cancels ctx with its cause
		rec.End = c.now()
		kind, msg := c.classify(ctx, context.Cause(ctx), metrics.FailTimeoutHeaders)
		c.fail(rec, kind, msg)
		return ""
	}
	rec.Headers = c.now()
	rec.Status = resp.StatusCode
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		c.httpError(ctx, resp, rec)
		return ""
	}
	if resp.StatusCode == http.StatusNoContent {
		rec.End = c.now()
		c.fail(rec, metrics.FailEmpty, "HTTP 204 No Content: the response carried no generated text")
		return ""
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if k.api != "embeddings" && (ct == "text/event-stream" || (streamed && ct != "application/json")) {
		return c.stream(ctx, cancel, resp, k, rec, tm)
	}
	if tm.first != nil {
		// A whole response's headers come when it is generated: its body is its first token
		// (the total timeout still bounds reading it).
		tm.first.Stop()
	}
	if k.api == "embeddings" {
		c.embeddings(ctx, resp, k, rec)
		return ""
	}
	return c.whole(ctx, resp, k, rec)
}

// classify maps a transport or read error to a failure kind, preferring the cause the
// request's context was canceled with.
func (c *client) classify(ctx context.Context, err error, fallback metrics.FailureKind) (metrics.FailureKind, string) {
	if kind, msg, ok := cancelledCause(context.Cause(ctx)); ok {
		return kind, msg
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrStopped) {
		return metrics.KindCancelled, "cancelled: " + cause.Error()
	}
	switch cause := context.Cause(ctx); cause {
	case errTimeoutConnect, errConnectByFirst:
		return metrics.FailTimeoutConnect, cause.Error()
	case errTimeoutHeaders, errHeadersByFirst:
		return metrics.FailTimeoutHeaders, cause.Error()
	case errTimeoutFirst:
		return metrics.FailTimeoutFirst, cause.Error()
	case errTimeoutIdle:
		return metrics.FailTimeoutIdle, cause.Error()
	case errTimeoutTotal:
		return metrics.FailTimeoutTotal, cause.Error()
	case errInterrupted:
		return metrics.FailCanceled, cause.Error()
	case nil:
	default:
		return metrics.FailCanceled, "canceled: " + cause.Error()
	}
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		// The client, not the server: no file descriptor was left for a new connection.
		return metrics.FailClientFDLimit, "the client ran out of file descriptors (" + err.Error() + "); raise the limit (ulimit -n), or multiplex with --http2"
	}
	if errors.Is(err, errMalformedSSE) {
		return metrics.FailMalformed, err.Error()
	}
	if errors.Is(err, errRedirectLoop) || errors.Is(err, errRedirectHost) {
		return metrics.FailMalformed, err.Error()
	}
	// net/http does not export its response-parsing errors; their text is stable
	// ("malformed HTTP status code", "malformed HTTP response", "malformed MIME header",
	// "server response headers exceeded N bytes").
	if msg := err.Error(); fallback == metrics.FailConnect && (strings.Contains(msg, "malformed HTTP") ||
		strings.Contains(msg, "malformed MIME") || strings.Contains(msg, "response headers exceeded")) {
		return metrics.FailMalformed, err.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && fallback == metrics.FailConnect {
		return metrics.FailTimeoutConnect, err.Error()
	}
	return fallback, err.Error()
}

func (c *client) fail(rec *metrics.Record, kind metrics.FailureKind, msg string) {
	rec.Failure = kind
	rec.Error = c.scrub(msg)
}

func (c *client) httpError(ctx context.Context, resp *http.Response, rec *metrics.Record) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	rec.End = c.now()
	msg := strings.TrimSpace(string(b))
	var f chunkFields
	if _, perr := parseChunk(b, &f, nil); perr == nil && f.errMsg != nil {
		msg = string(f.errMsg)
	}
	// (An Anthropic error body {"type":"error","error":{"type","message"}} has the same
	// "error" object, which parseChunk reads.)
	if msg == "" && err != nil {
		_, msg = c.classify(ctx, err, metrics.FailStreamBroken)
	}
	msg = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, msg)
	switch s := resp.StatusCode; {
	case s == http.StatusTooManyRequests:
		c.fail(rec, metrics.FailHTTP429, msg)
	case s >= 400 && s < 500:
		c.fail(rec, metrics.FailHTTP4xx, msg)
	case s >= 500:
		c.fail(rec, metrics.FailHTTP5xx, msg)
	default:
		c.fail(rec, metrics.FailMalformed, "unexpected "+msg)
		return
	}
	c.noteServerError(rec, b)
}

// fnv64a constants: the output hash is computed incrementally over the chunks' text.
// Written by hand rather than with hash/fnv because the library's hasher is an interface
// value that escapes: one allocation per request where this path has none per chunk
// (measured: BenchmarkIngest 0 -> 1 alloc/op, BenchmarkRequest 27,677 -> 27,931 allocs per
// 256 requests). FNV-1a is four lines, and fnv_test.go checks them against hash/fnv.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvAdd(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

func hashString(h uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[h&15]
		h >>= 4
	}
	return string(b[:])
}

// chunkLimit bounds the content chunks kept for one request: a server that streams far more
// than it was asked for must not grow memory without bound.
func chunkLimit(maxTokens int) int { return 2*maxTokens + 4096 }

// textLimit bounds the generated text read for one request, in bytes: far more than any
// tokenizer produces per token, so only a server streaming without end reaches it.
func textLimit(maxTokens int) int { return 64*maxTokens + 1<<20 }

// maxChunkTokens bounds one chunk's count (a hostile usage figure must not overflow).
const maxChunkTokens = 1<<31 - 1

func (c *client) stream(ctx context.Context, cancel context.CancelCauseFunc, resp *http.Response, k *call, rec *metrics.Record, tm *timers) string {
	if b, ok := resp.Body.(*h2Body); ok {
		return c.streamPushed(ctx, cancel, b, k, rec, tm)
	}
	st := c.newStreamState(ctx, cancel, k, rec, tm)
	defer st.close()
	sr := st.bufs.sr
	sr.reset(resp.Body)
	sr.max = c.maxLine
	defer sr.reset(nil)
	for st.reading {
		data, event, err := sr.next()
		t := c.now()
		if err != nil {
			st.broken(err, t)
			break
		}
		st.event(data, event, t)
	}
	if st.failed {
		return ""
	}
	out := st.complete()
	c.drain(resp.Body, tm, cancel)
	return out
}

// streamPushed reads a streamed HTTP/2 response in place: its events are parsed on the
// connection's read loop as the frames come (h2Sink), and this goroutine waits for the end.
func (c *client) streamPushed(ctx context.Context, cancel context.CancelCauseFunc, b *h2Body, k *call, rec *metrics.Record, tm *timers) string {
	st := c.newStreamState(ctx, cancel, k, rec, tm)
	defer st.close()
	ps := &pushedStream{st: st, p: newSSEPush(c.maxLine), done: make(chan struct{})}
	b.push(ps)
	<-ps.done
	if st.failed {
		return ""
	}
	out := st.complete()
	// What follows the end marker (END_STREAM, usually in the same frame) frees the stream;
	// a server that keeps it open past drainTimeout has it reset.
	tm.stop()
	t := time.NewTimer(drainTimeout)
	select {
	case <-b.s.endCh:
	case <-t.C:
	}
	t.Stop()
	return out
}

// pushedStream is the h2Sink of a streamed response: ssePush into streamState, on the
// connection's read loop, with the stream's lock held.
type pushedStream struct {
	st   *streamState
	p    *ssePush
	done chan struct{} // closed when the state has its outcome
}

func (ps *pushedStream) data(b []byte) {
	st := ps.st
	if !st.reading {
		return
	}
	t := st.c.now()
	if err := ps.p.feed(b, func(data, event []byte) bool { st.event(data, event, t); return st.reading }); err != nil && st.reading {
		st.broken(err, t)
	}
	if !st.reading {
		close(ps.done)
	}
}

func (ps *pushedStream) end(err error) {
	st := ps.st
	if !st.reading {
		return
	}
	t := st.c.now()
	if err == nil {
		err = ps.p.end(func(data, event []byte) bool { st.event(data, event, t); return st.reading })
	}
	if st.reading {
		st.broken(err, t)
	}
	close(ps.done)
}

// streamState is one streamed response being read, event by event: the same for a body read
// by its request's goroutine (sseReader) and for one pushed frame by frame from an HTTP/2
// connection's read loop (ssePush).
type streamState struct {
	c       *client
	ctx     context.Context
	cancel  context.CancelCauseFunc
	k       *call
	rec     *metrics.Record
	tm      *timers
	bufs    *streamBufs
	n       counter
	f       chunkFields
	events  int
	reading bool // more events are wanted
	failed  bool // the record holds a failure
}

func (c *client) newStreamState(ctx context.Context, cancel context.CancelCauseFunc, k *call, rec *metrics.Record, tm *timers) *streamState {
	st := &streamState{c: c, ctx: ctx, cancel: cancel, k: k, rec: rec, tm: tm, reading: true,
		bufs: c.bufs.Get().(*streamBufs)}
	st.n = counter{c: c, rec: rec, hash: fnvOffset, keep: k.keepText, natural: k.natural}
	if k.capture {
		st.n.cap = &capture{}
	}
	return st
}

// close hands the buffers back and stores what was captured, whatever the outcome.
func (st *streamState) close() {
	if st.n.cap != nil {
		st.n.cap.store(st.rec)
	}
	st.c.bufs.Put(st.bufs)
	st.bufs = nil
}

// complete settles a stream that reached its end marker and returns its output text.
func (st *streamState) complete() string {
	st.n.finish()
	st.n.complete()
	return string(st.n.out)
}

// stop ends the stream with a failure at t.
func (st *streamState) stop(t int64, kind metrics.FailureKind, msg string) {
	st.rec.End = t
	st.n.finish()
	st.c.fail(st.rec, kind, msg)
	st.reading, st.failed = false, true
}

// broken ends the stream on a read error at t: the body ended (io.EOF, io.ErrUnexpectedEOF)
// before the end marker, or reading it failed.
func (st *streamState) broken(err error, t int64) {
	c, ctx := st.c, st.ctx
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		if cause := context.Cause(ctx); cause != nil {
			kind, msg := c.classify(ctx, err, metrics.FailStreamBroken)
			st.stop(t, kind, msg)
		} else {
			st.stop(t, metrics.FailStreamBroken, fmt.Sprintf("the stream ended without %s after %d events", endMarker(st.k.api), st.events))
		}
	default:
		kind, msg := c.classify(ctx, err, metrics.FailStreamBroken)
		st.stop(t, kind, fmt.Sprintf("after %d events: %s", st.events, msg))
	}
}

// event takes one server-sent event read at t; afterwards st.reading says whether more are
// wanted (false at the end marker, or on a failure).
func (st *streamState) event(data, event []byte, t int64) {
	c, k, rec, tm, n, f := st.c, st.k, st.rec, st.tm, &st.n, &st.f
	st.events++
	if string(data) == "[DONE]" {
		rec.End = t
		st.reading = false
		return
	}
	var final bool
	var err error
	st.bufs.scratch, final, err = parseAPI(k.api, data, f, st.bufs.scratch)
	if err != nil {
		st.stop(t, metrics.FailMalformed, fmt.Sprintf("event %d: %v: %q", st.events, err, clip(data, 120)))
		return
	}
	if f.isError || string(event) == "error" {
		msg := string(f.errMsg)
		if msg == "" {
			msg = string(f.message)
		}
		if msg == "" {
			msg = string(clip(data, 200))
		}
		st.stop(t, metrics.FailServerError, "error in stream: "+msg)
		c.noteServerError(st.rec, data)
		return
	}
	if n.cap != nil {
		n.cap.add(data)
	}
	n.onChunk(f, t)
	if len(f.text) > 0 && tm.idleD > 0 {
		// Only generated output counts as activity; the idle timer runs from the first
		// token on (before it, the first-token timeout applies).
		if tm.idle == nil {
			tm.idle = startIdle(tm.idleD, c.now, st.cancel)
		} else {
			tm.idle.touch(t)
		}
	}
	if n.textLen > textLimit(k.maxTokens) {
		st.stop(t, metrics.FailMalformed, fmt.Sprintf("the server sent more than %d bytes of text for max_tokens %d; stopped reading", textLimit(k.maxTokens), k.maxTokens))
		return
	}
	if n.chunks() > chunkLimit(k.maxTokens) {
		st.stop(t, metrics.FailMalformed, fmt.Sprintf("the server sent more than %d content chunks for max_tokens %d; stopped reading", chunkLimit(k.maxTokens), k.maxTokens))
		return
	}
	if n.textSeen && tm.first != nil {
		tm.first.Stop()
		tm.first = nil
	}
	if final {
		// The Responses and Messages streams end with an event of their own, not [DONE].
		rec.End = t
		st.reading = false
	}
}

// drain reads what is left of a finished stream (the chunked terminator) so the connection
// can be reused, for at most drainTimeout and drainLimit bytes; past the timeout the request
// is canceled, which closes the connection. The record is settled before this.
func (c *client) drain(body io.Reader, tm *timers, cancel context.CancelCauseFunc) {
	tm.stop()
	t := time.AfterFunc(drainTimeout, func() { cancel(errDrain) })
	io.Copy(io.Discard, io.LimitReader(body, drainLimit))
	t.Stop()
}

func (c *client) whole(ctx context.Context, resp *http.Response, k *call, rec *metrics.Record) string {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONBody+1))
	rec.End = c.now()
	if err != nil {
		kind, msg := c.classify(ctx, err, metrics.FailStreamBroken)
		c.fail(rec, kind, "reading the response: "+msg)
		return ""
	}
	if len(b) > maxJSONBody {
		c.fail(rec, metrics.FailMalformed, fmt.Sprintf("the response body is longer than %d bytes; stopped reading", maxJSONBody))
		return ""
	}
	var f chunkFields
	if err := parseWhole(k.api, b, &f); err != nil {
		c.fail(rec, metrics.FailMalformed, fmt.Sprintf("response body: %v: %q", err, clip(b, 120)))
		return ""
	}
	if f.isError {
		c.fail(rec, metrics.FailServerError, "error in response: "+string(f.errMsg))
		c.noteServerError(rec, b)
		return ""
	}
	n := counter{c: c, rec: rec, hash: fnvOffset, keep: k.keepText, natural: k.natural}
	if k.capture {
		n.cap = &capture{}
		n.cap.add(b)
		defer n.cap.store(rec)
	}
	n.onWhole(&f)
	n.finish()
	n.complete()
	return string(n.out)
}

// validHeaderName reports whether s is "" or an HTTP header field name (an RFC 9110 token).
func validHeaderName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
