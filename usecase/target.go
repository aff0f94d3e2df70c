package usecase

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/redact"
	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/tokenizer"
)

// TargetOptions select and configure the endpoint under test (--endpoint, --api, --backend,
// the timeouts, the tokenizer, …).
type TargetOptions struct {
	Endpoint     string
	API          string
	BatchSize    int
	Backend      string
	NoStream     bool
	APIKeyEnv    string
	Headers      []string
	CACert       string
	Insecure     bool
	TConnect     time.Duration
	THeaders     time.Duration // 0: the first-token timeout bounds the header wait (loadgen.Timeouts.Headers)
	TFirstToken  time.Duration
	TIdle        time.Duration
	TTotal       time.Duration
	MaxLine      int
	Tokenizer    string
	PromptSizing string
	ScrapeMetric bool
	// Connections at scale (issue 18).
	SourceAddrs string
	HTTP2       bool
	// Agentic sessions.
	SessionHeader string
}

// Target builds the loadgen target for the server at url; model is the model name to request
// ("" = discover). The API key is read from the environment through getenv.
func (f *TargetOptions) Target(getenv func(string) string, url, model string) (loadgen.Target, error) {
	t := loadgen.Target{
		URL:                url,
		API:                f.API,
		BatchSize:          f.BatchSize,
		Model:              model,
		Backend:            f.Backend,
		Stream:             !f.NoStream,
		CACertFile:         f.CACert,
		InsecureSkipVerify: f.Insecure,
		Timeouts:           loadgen.Timeouts{Connect: f.TConnect, Headers: f.THeaders, FirstToken: f.TFirstToken, Idle: f.TIdle, Total: f.TTotal},
		MaxLineBytes:       f.MaxLine,
		SessionHeader:      f.SessionHeader,
		HTTP2:              f.HTTP2,
	}
	if f.SourceAddrs != "" {
		addrs, err := loadgen.ParseSourceAddrs(f.SourceAddrs)
		if err != nil {
			return t, fmt.Errorf("--source-addrs: %w", err)
		}
		t.SourceAddrs = addrs
	}
	if err := f.check(url); err != nil {
		return t, err
	}
	if f.APIKeyEnv != "" {
		key := getenv(f.APIKeyEnv)
		if key == "" {
			return t, fmt.Errorf("--api-key-env %s: the variable is empty or unset", f.APIKeyEnv)
		}
		t.APIKey = key
	}
	headers, err := parseHeaders(f.Headers)
	if err != nil {
		return t, err
	}
	t.Headers = headers
	return t, nil
}

// check refuses timeouts, line limits, APIs and batch sizes that cannot work, and an
// endpoint that would fail every request.
func (f *TargetOptions) check(url string) error {
	if f.TConnect < 0 || f.THeaders < 0 || f.TFirstToken < 0 || f.TIdle < 0 || f.TTotal < 0 {
		return fmt.Errorf("--timeout-connect, --timeout-headers, --timeout-first-token, --timeout-idle and --timeout-total must be >= 0 (0 = none; for --timeout-headers, the first-token timeout)")
	}
	if f.THeaders > 0 && (f.NoStream || f.API == "embeddings") {
		return fmt.Errorf("--timeout-headers applies to streamed requests: a non-streamed answer's headers come with the whole answer, which --timeout-first-token bounds")
	}
	if f.MaxLine < 1024 {
		return fmt.Errorf("--max-line-bytes %d: want at least 1024", f.MaxLine)
	}
	if err := CheckEndpoint(url); err != nil {
		return err
	}
	if f.API != "" && !slices.Contains(loadgen.APIs(), f.API) {
		return fmt.Errorf("--api %s: want one of %s", safetext.Quote(f.API, 40), strings.Join(loadgen.APIs(), ", "))
	}
	if f.BatchSize < 1 || (f.BatchSize > 1 && f.API != "embeddings") {
		return fmt.Errorf("--batch-size %d: want at least 1, and above 1 only with --api embeddings", f.BatchSize)
	}
	return nil
}

// parseHeaders reads --header K:V values (nil when none).
func parseHeaders(in []string) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, h := range in {
		k, v, ok := strings.Cut(h, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("--header %s: want K:V", redactHeader(h))
		}
		if !validHeaderName(k) {
			return nil, fmt.Errorf("--header %s: the name may hold only letters, digits and !#$%%&'*+-.^_`|~", safetext.Quote(k, 64))
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("--header %s: the value holds a line break or NUL (one header per --header)", safetext.Quote(k, 64))
		}
		out[k] = v
	}
	return out, nil
}

// CheckEndpoint rejects an --endpoint that would fail every request: not http(s), no host, a
// port outside 1-65535, or control characters.
func CheckEndpoint(raw string) error {
	shown := safetext.Quote(redact.URL(raw), 200)
	if strings.ContainsFunc(raw, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("--endpoint %s: holds a control character", shown)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("--endpoint %s: want http://host:port or https://host (optionally ending in /v1)", shown)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("--endpoint %s: port %s is not in 1-65535", shown, safetext.Quote(p, 20))
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return fmt.Errorf("--endpoint %s: empty port", shown)
	}
	return nil
}

// validHeaderName reports whether k is an HTTP token (RFC 9110 section 5.6.2).
func validHeaderName(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return k != ""
}

// redactHeader keeps a header's name and hides its value in error messages; a header given
// without ':' is shown not at all (it may be a bare secret).
func redactHeader(h string) string {
	if k, _, ok := strings.Cut(h, ":"); ok {
		return safetext.Escape(k, 64) + ":" + redact.Marker
	}
	return "<a value without ':'>"
}

// LoadTokenizer loads --tokenizer (default: reference on the embedded engine, approx
// elsewhere).
func (f *TargetOptions) LoadTokenizer(embedded bool) (tokenizer.Tokenizer, error) {
	spec := f.Tokenizer
	if spec == "" {
		if embedded {
			spec = "reference"
		} else {
			spec = "approx"
		}
	}
	tok, err := tokenizer.Load(spec)
	if err != nil {
		return nil, fmt.Errorf("--tokenizer: %w", err)
	}
	return tok, nil
}

// Sizing resolves --prompt-sizing for a target (embedded: the reference engine): auto is
// the tokenizer where it is exact (the embedded engine, a tokenizer.json), else the server.
func (f *TargetOptions) Sizing(embedded bool) (string, error) {
	mode := f.PromptSizing
	if !slices.Contains(loadgen.SizingModes(), mode) {
		return "", fmt.Errorf("--prompt-sizing %s: want one of %s", safetext.Quote(mode, 40), strings.Join(loadgen.SizingModes(), ", "))
	}
	hfFile := f.Tokenizer != "" && f.Tokenizer != "reference" && f.Tokenizer != "approx"
	switch {
	case embedded && (mode == loadgen.SizingServer || mode == loadgen.SizingCalibrate):
		return "", fmt.Errorf("--prompt-sizing %s measures an outside server; the embedded reference engine counts with the reference tokenizer, which sizes prompts exactly (give --endpoint, or drop the flag)", mode)
	case mode == loadgen.SizingAuto && (embedded || hfFile):
		return loadgen.SizingTokenizer, nil
	}
	return mode, nil
}
