package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/llmbench/llmbench/internal/safetext"
)

// maxModelID bounds a discovered model name (it goes into every request and the results).
const maxModelID = 256

// DiscoverModel asks the target's /v1/models for the model it serves and returns the first
// one listed.
func DiscoverModel(ctx context.Context, t Target) (string, error) {
	c, err := newClient(t, nil)
	if err != nil {
		return "", err
	}
	defer c.close()
	return c.discover(ctx)
}

func (c *client) discover(ctx context.Context) (string, error) {
	if d := c.target.Timeouts.Connect; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	u := c.base + "/v1/models" // without the query, which may hold a key
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+c.query, nil)
	if err != nil {
		return "", fmt.Errorf("model discovery: %s", c.scrub(err.Error()))
	}
	c.header(req.Header)
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("model discovery at %s: %s; is the server up? give --model to skip discovery", u, c.scrub(err.Error()))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return "", fmt.Errorf("model discovery at %s: reading the response: %s", u, c.scrub(err.Error()))
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("model discovery at %s: HTTP %d: %s; give --model to skip discovery", u, resp.StatusCode, c.scrub(strings.TrimSpace(string(b))))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return "", fmt.Errorf("model discovery at %s: the response is not a model list (%v); give --model", u, err)
	}
	for _, m := range list.Data {
		if m.ID == "" {
			continue
		}
		if len(m.ID) > maxModelID || strings.ContainsFunc(m.ID, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return "", fmt.Errorf("model discovery at %s: the server lists a model id of %d bytes that is not a plain name (%s); give --model",
				u, len(m.ID), safetext.Quote(c.redact.String(m.ID), 60))
		}
		return m.ID, nil
	}
	return "", fmt.Errorf("model discovery at %s: the server lists no model; give --model", u)
}
