package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

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
		if m.ID != "" {
			return m.ID, nil
		}
	}
	return "", fmt.Errorf("model discovery at %s: the server lists no model; give --model", u)
}
