package refengine

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/refengine/perf"
)

// pngDataURL is a data URL of a w × h PNG.
func pngDataURL(w, h int) string {
	var b bytes.Buffer
	png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)))
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}

// FuzzDecodeAPIRequest: the Responses, Messages and embeddings decoders never panic, refuse
// with a 4xx that encodes in the API's error format, and accept only requests within bounds.
func FuzzDecodeAPIRequest(f *testing.F) {
	img := pngDataURL(600, 300)
	webp, err := os.ReadFile("testdata/images/lossless-640x480.webp") // made with cwebp -lossless
	if err != nil {
		f.Fatal(err)
	}
	webpPart := func(b []byte) string {
		return `{"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/webp;base64,` + base64.StdEncoding.EncodeToString(b) + `"}]}]}`
	}
	for _, s := range []string{
		webpPart(webp), webpPart(webp[:30]), // a whole WebP, and its header cut short
		`{"model":"m","input":"hello world","max_output_tokens":5,"stream":true}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"` + img + `"}]}],"instructions":"be brief"}`,
		`{"max_tokens":4,"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + img[len("data:image/png;base64,"):] + `"}}]}]}`,
		`{"max_tokens":4,"messages":[{"role":"assistant","content":"x"}],"temperature":3}`,
		`{"input":["a b","c"],"encoding_format":"base64","dimensions":8}`, `{"input":[[1,2],[3]]}`,
		`{"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,!!"}]}]}`,
		`[]`, `{`, ``, `{"input":null}`,
	} {
		for api := range 3 {
			f.Add([]byte(s), uint8(api))
		}
	}
	lim := decodeLimits{servedModel: "m", maxModelLen: 2048, defaultMaxTokens: 16, vision: perf.DefaultVision}
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		api := []wireAPI{apiResponses, apiMessages, apiEmbeddings}[which%3]
		var aerr *apiError
		if api == apiEmbeddings {
			var ins []embedInput
			var dims int
			ins, _, dims, aerr = decodeEmbeddings(body, lim, 64)
			if aerr == nil && (len(ins) == 0 || dims < 1 || dims > 64) {
				t.Fatalf("accepted %d inputs of %d dimensions", len(ins), dims)
			}
			for _, in := range ins {
				if len(in.ids) == 0 || len(in.ids) >= lim.maxModelLen {
					t.Fatalf("accepted an input of %d tokens", len(in.ids))
				}
			}
		} else {
			var r *request
			r, aerr = decodeAPIRequest(body, api, lim)
			if aerr == nil && (r.promptTokens < 1 || r.maxTokens < 1 || r.promptTokens+r.maxTokens > lim.maxModelLen ||
				r.temperature < 0 || r.temperature > 2 || r.imageTokens > r.promptTokens || len(r.promptIDs) != r.promptTokens) {
				t.Fatalf("accepted an invalid request: %+v", r)
			}
		}
		if aerr != nil {
			if aerr.status < 400 || aerr.status > 499 || aerr.message == "" {
				t.Fatalf("bad error %+v", aerr)
			}
			var eb errorBody
			if err := json.Unmarshal(appendAnthropicError(nil, aerr), &eb); err != nil || eb.Error.Message != aerr.message {
				t.Fatalf("Anthropic error body does not round-trip: %v", err)
			}
		}
	})
}

// TestDecodeImages: an image's tokens (by the vision rule) join the prompt, in every API's part
// shape; the same image gives the same placeholder ids.
func TestDecodeImages(t *testing.T) {
	img := pngDataURL(1024, 768) // 765 tokens
	lim := decodeLimits{servedModel: "m", maxModelLen: 4096, defaultMaxTokens: 16, vision: perf.DefaultVision}
	chat, aerr := decodeRequest([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"a b"},{"type":"image_url","image_url":{"url":"`+img+`"}}]}]}`), true, lim)
	if aerr != nil {
		t.Fatal(aerr)
	}
	resp, aerr := decodeAPIRequest([]byte(`{"input":[{"role":"user","content":[{"type":"input_text","text":"a b"},{"type":"input_image","image_url":"`+img+`"}]}]}`), apiResponses, lim)
	if aerr != nil {
		t.Fatal(aerr)
	}
	msgs, aerr := decodeAPIRequest([]byte(`{"max_tokens":3,"messages":[{"role":"user","content":[{"type":"text","text":"a b"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"`+img[len("data:image/png;base64,"):]+`"}}]}]}`), apiMessages, lim)
	if aerr != nil {
		t.Fatal(aerr)
	}
	for _, r := range []*request{chat, resp, msgs} {
		if r.images != 1 || r.imageTokens != 765 || r.promptTokens != 2+765 {
			t.Errorf("%d images, %d image tokens, %d prompt tokens", r.images, r.imageTokens, r.promptTokens)
		}
	}
	if !equalInts(chat.promptIDs, resp.promptIDs) || chat.promptHash != resp.promptHash {
		t.Error("the same text and image differ between chat and Responses")
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A WebP image is sized from its header and priced; one cut short is a 400 that names the
// formats the engine reads.
func TestDecodeAPIRequestReadsWebP(t *testing.T) {
	webp, err := os.ReadFile("testdata/images/lossless-640x480.webp")
	if err != nil {
		t.Fatal(err)
	}
	lim := decodeLimits{servedModel: "m", maxModelLen: 4096, defaultMaxTokens: 16, vision: perf.DefaultVision}
	body := func(b []byte) []byte {
		return []byte(`{"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/webp;base64,` + base64.StdEncoding.EncodeToString(b) + `"}]}]}`)
	}
	r, aerr := decodeAPIRequest(body(webp), apiResponses, lim)
	if aerr != nil || r.imageTokens != perf.DefaultVision.ImageTokens(640, 480) {
		t.Fatalf("whole WebP: %+v, image tokens %v, want %d", aerr, r, perf.DefaultVision.ImageTokens(640, 480))
	}
	if _, aerr := decodeAPIRequest(body(webp[:20]), apiResponses, lim); aerr == nil || aerr.status != 400 || !strings.Contains(aerr.message, "WebP") {
		t.Fatalf("cut-short WebP: %+v", aerr)
	}
}
