package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	"github.com/llmbench/llmbench/internal/redact"
	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/traces"
)

// FetchOptions bound a trace download.
type FetchOptions struct {
	// MaxBytes refuses a larger body (default 16 GiB): a server that streams forever cannot
	// fill the disk.
	MaxBytes int64
	// Client sends the request (default: a client that follows at most 10 redirects, without
	// a timeout of its own; the context bounds the whole download).
	Client *http.Client
}

// FetchTrace downloads the trace at rawURL (http or https) to dst and checks that its SHA-256
// is wantSHA256 before dst appears: the body goes to a temporary file beside dst, renamed
// only once the digest matches, so a failed or tampered download leaves nothing a run could
// read. The pods of a sharded Kubernetes run fetch a trace too large for a ConfigMap this way
// (llmbench trace fetch, k8sjob). It returns the bytes written.
func FetchTrace(ctx context.Context, rawURL, wantSHA256, dst string, o FetchOptions) (int64, error) {
	want, err := traces.ParseSHA256(wantSHA256)
	if err != nil {
		return 0, err
	}
	shown := safetext.Quote(redact.URL(rawURL), 200)
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return 0, fmt.Errorf("trace URL %s: want an http:// or https:// URL", shown)
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 16 << 30
	}
	client := o.Client
	if client == nil {
		client = &http.Client{}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return 0, fmt.Errorf("trace URL %s: %v", shown, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("fetch %s: %s", shown, safetext.Quote(redact.URLsIn(err.Error()), 300))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("fetch %s: the server answered %s", shown, resp.Status)
	}
	if resp.ContentLength > o.MaxBytes {
		return 0, fmt.Errorf("fetch %s: %d bytes, more than the %d allowed", shown, resp.ContentLength, o.MaxBytes)
	}
	return saveChecked(resp.Body, shown, want, dst, o.MaxBytes)
}

// saveChecked copies body to dst through a temporary file, keeping it only when its digest is
// want and it is at most max bytes.
func saveChecked(body io.Reader, shown, want, dst string, max int64) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".part-*")
	if err != nil {
		return 0, err
	}
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(body, max+1))
	switch {
	case err != nil:
		return n, fmt.Errorf("fetch %s: after %d bytes: %s", shown, n, safetext.Quote(redact.URLsIn(err.Error()), 300))
	case n > max:
		return n, fmt.Errorf("fetch %s: more than the %d bytes allowed", shown, max)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return n, fmt.Errorf("fetch %s: sha256 of the %d bytes received is %s, not the %s expected: nothing was written", shown, n, got, want)
	}
	if err := tmp.Close(); err != nil {
		return n, err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return n, errors.Join(fmt.Errorf("fetch %s: keep %s", shown, dst), err)
	}
	keep = true
	return n, nil
}
