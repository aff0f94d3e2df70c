package usecase

import (
	"strings"
	"testing"
)

func TestWarnFDHeadroom(t *testing.T) {
	for _, c := range []struct {
		planned         int
		embedded, http2 bool
		limit           uint64
		warn            string
	}{
		{planned: 10000, embedded: true, limit: 20000, warn: "20064 file descriptors (two per stream"},
		{planned: 10000, limit: 20000},
		{planned: 30000, limit: 20000, warn: "30064 file descriptors, but the limit is 20000"},
		{planned: 30000, http2: true, limit: 20000},
		{planned: 0, limit: 10},
		{planned: 30000, limit: 0},
	} {
		var b strings.Builder
		warnFDHeadroom(&b, c.planned, c.embedded, c.http2, c.limit)
		if got := b.String(); c.warn == "" && got != "" || c.warn != "" && !strings.Contains(got, c.warn) {
			t.Errorf("%+v: %q", c, got)
		}
	}
}
