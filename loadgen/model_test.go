package loadgen

import "testing"

// A 404 is model_not_found when its error says the model does not exist, in each server's
// words; other 404 bodies are not (issue 38).
func TestModelNotFound(t *testing.T) {
	for body, want := range map[string]bool{
		"{\"error\":{\"message\":\"The model `x` does not exist.\",\"type\":\"NotFoundError\",\"param\":\"model\",\"code\":404}}":                           true, // vLLM, the reference engine
		"{\"object\":\"error\",\"message\":\"The model `x` does not exist.\",\"type\":\"NotFoundError\",\"param\":null,\"code\":404}":                       true, // vLLM's older top-level shape
		`{"error":{"message":"The model 'gpt-9' does not exist or you do not have access to it.","type":"invalid_request_error","code":"model_not_found"}}`: true, // OpenAI
		`{"error":{"message":"model 'x' not found","type":"not_found_error"}}`:                                                                              true, // Ollama-like
		`{"error":{"message":"Not Found","type":"not_found_error"}}`:                                                                                        false,
		`{"detail":"Not Found"}`: false,
	} {
		d, ok := parseErrorBody([]byte(body))
		if !ok {
			d = errDetail{message: body}
		}
		if got := d.modelNotFound(); got != want {
			t.Errorf("%s: modelNotFound %v, want %v", body, got, want)
		}
	}
}
