package runner

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzServerConfigBodies feeds arbitrary server answers to every configuration reader (the
// JSON of /slots, /v1/models, /props and the like, and a /metrics body): none may panic, and
// every fact stays bounded (key count, value length, valid UTF-8 where the input was).
func FuzzServerConfigBodies(f *testing.F) {
	f.Add([]byte(`[{"id":0,"id_task":3,"n_ctx":4096,"speculative":true,"params":{"speculative.n_max":16,"speculative.types":"draft"}}]`))
	f.Add([]byte(`{"object":"list","data":[{"id":"m","created":1,"max_model_len":32768,"meta":{"n_params":1.35e8}},{"id":7},"x"]}`))
	f.Add([]byte(`{"default_generation_settings":{"params":{"seed":4294967295}},"media_marker":"<__media_x__>","total_slots":[1,[2,{"a":null}]]}`))
	f.Add([]byte("# TYPE vllm:spec_decode_num_drafts_total counter\nvllm:cache_config_info{block_size=\"16\",cache_dtype=\"fp\\\"8\\n\"} 1\n"))
	f.Add([]byte(`[{"id":-1e300,"params":"no"}, 5]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(what string, m map[string]string) {
			if len(m) > maxConfigKeys+1 {
				t.Fatalf("%s: %d facts", what, len(m))
			}
			for k, v := range m {
				if len(v) > maxConfigValue+len("…") {
					t.Fatalf("%s: %s is %d bytes", what, k, len(v))
				}
				if utf8.Valid(body) && !utf8.ValidString(v) {
					t.Fatalf("%s: %s cut inside a character: %q", what, k, v)
				}
				_ = VolatileConfigKey(k)
			}
		}
		check("metrics", metricsBodyFacts(body))
		var v any
		if json.Unmarshal(body, &v) != nil {
			return
		}
		check("slots", slotFacts(v))
		check("models", modelFacts(v))
		check("object", flattened("x", v))
		if d, ignored := diffConfig(flattened("a", v), modelFacts(v)); len(d)+len(ignored) > 2*(maxConfigKeys+1) {
			t.Fatalf("%d differences", len(d))
		}
	})
}
