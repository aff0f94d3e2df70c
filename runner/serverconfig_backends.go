package runner

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// llamacppSlots reads llama.cpp's GET /slots (tools/server/README.md "GET /slots"): an array
// with one object per slot. Only what configures a slot is kept, from the first slot (every
// slot of one server is configured alike): its context size, whether a draft model is loaded
// ("speculative", which /props does not show) and the speculative parameters
// ("speculative.n_max", "speculative.types", …). What a slot is doing now (id_task,
// is_processing, next_token, the prompt) is state, not configuration, and is left out.
func llamacppSlots(ctx context.Context, f *configFetcher) map[string]string {
	v, ok := f.getAnyJSON(ctx, http.MethodGet, "/slots", nil)
	if !ok {
		return nil
	}
	return slotFacts(v)
}

// slotFacts are llamacppSlots' facts from the decoded /slots body.
func slotFacts(v any) map[string]string {
	slots, _ := v.([]any)
	if len(slots) == 0 {
		return nil
	}
	first, ok := slots[0].(map[string]any)
	if !ok {
		return nil
	}
	out := map[string]string{"llamacpp.slots.count": fmt.Sprint(len(slots))}
	for _, k := range []string{"n_ctx", "speculative"} {
		if x, ok := first[k]; ok {
			flatten("llamacpp.slots."+k, x, out)
		}
	}
	if params, ok := first["params"].(map[string]any); ok {
		for k, x := range params {
			if strings.HasPrefix(k, "speculative") {
				flatten("llamacpp.slots.params."+k, x, out)
			}
		}
	}
	return capKeys(out)
}

// modelList reads /v1/models: the sorted ids ("models") and, per model, what its entry says
// beyond the id and the per-request fields (object, created, permission): vLLM's
// max_model_len, root and parent, llama.cpp's meta (n_params, n_ctx_train, …), owned_by.
func modelList(ctx context.Context, f *configFetcher) map[string]string {
	v, ok := f.getJSON(ctx, http.MethodGet, "/v1/models", nil)
	if !ok {
		return nil
	}
	return modelFacts(v)
}

// modelFacts are modelList's facts from the decoded /v1/models body.
func modelFacts(v any) map[string]string {
	m, _ := v.(map[string]any)
	data, _ := m["data"].([]any)
	var ids []string
	out := map[string]string{}
	for _, d := range data {
		dm, ok := d.(map[string]any)
		if !ok {
			continue
		}
		id, ok := dm["id"].(string)
		if !ok {
			continue
		}
		ids = append(ids, id)
		for k, x := range dm {
			switch k {
			case "id", "object", "created", "permission":
				continue
			}
			flatten("models."+id+"."+k, x, out)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sort.Strings(ids)
	out = capKeys(out)
	out["models"] = clipValue(strings.Join(ids, ","))
	return out
}

// metricsFacts reads a Prometheus /metrics body for configuration: vLLM's cache_config_info
// labels, and whether vLLM runs speculative decoding (it registers its vllm:spec_decode_*
// counters only with a speculative config: vllm/v1/spec_decode/metrics.py).
func metricsFacts(ctx context.Context, f *configFetcher) map[string]string {
	b, ok := f.fetch(ctx, http.MethodGet, "/metrics", nil, 8<<20)
	if !ok {
		return nil
	}
	return metricsBodyFacts(b)
}

// metricsBodyFacts are metricsFacts' facts from a /metrics body.
func metricsBodyFacts(b []byte) map[string]string {
	out := vllmCacheConfig(b)
	vllm, spec := false, false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(sc.Text(), "# HELP "), "# TYPE "), " ")
		if strings.HasPrefix(line, "vllm:") {
			vllm = true
			spec = spec || strings.HasPrefix(line, "vllm:spec_decode")
		}
	}
	if vllm {
		out["vllm.spec_decode"] = map[bool]string{true: "on", false: "off"}[spec]
	}
	return out
}

// vllmCacheConfig reads the labels of vLLM's vllm:cache_config_info gauge from a /metrics body.
func vllmCacheConfig(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "vllm:cache_config_info{")
		if !ok {
			continue
		}
		end := labelEnd("{" + rest)
		if end < 0 {
			continue
		}
		for k, v := range parseLabels(rest[:end-1]) {
			out["vllm.cache_config."+k] = clipValue(v)
		}
		break
	}
	return out
}

// parseLabels reads a Prometheus label set body: name="value",… with \" \\ \n escapes.
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return out
		}
		name := strings.TrimSpace(s[:eq])
		var val strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				if s[i] == 'n' {
					val.WriteByte('\n')
					continue
				}
			}
			val.WriteByte(s[i])
		}
		out[name] = val.String()
		s = strings.TrimPrefix(s[min(i+1, len(s)):], ",")
	}
	return out
}

func flattened(prefix string, v any) map[string]string {
	out := map[string]string{}
	flatten(prefix, v, out)
	return capKeys(out)
}

// flatten writes v's scalar leaves into out under dotted keys, each cut to maxConfigValue.
func flatten(prefix string, v any, out map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			flatten(prefix+"."+k, c, out)
		}
	case []any:
		for i, c := range t {
			flatten(fmt.Sprintf("%s.%d", prefix, i), c, out)
		}
	case nil:
		out[prefix] = ""
	case float64:
		// JSON numbers: integers as integers (135000000, not 1.35e+08).
		f := 'g'
		if t == math.Trunc(t) && math.Abs(t) < 1e21 {
			f = 'f'
		}
		out[prefix] = strconv.FormatFloat(t, byte(f), -1, 64)
	default:
		out[prefix] = clipValue(fmt.Sprint(t))
	}
}

func clipValue(s string) string {
	if len(s) <= maxConfigValue {
		return s
	}
	cut := maxConfigValue
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// capKeys keeps the first maxConfigKeys facts of m in key order.
func capKeys(m map[string]string) map[string]string {
	if len(m) <= maxConfigKeys {
		return m
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys[maxConfigKeys:] {
		delete(m, k)
	}
	return m
}
