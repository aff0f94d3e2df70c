package refengine

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	_ "image/gif" // image.DecodeConfig reads GIF, JPEG and PNG headers
	_ "image/jpeg"
	_ "image/png"

	_ "golang.org/x/image/webp" // and WebP's (VP8, VP8L and VP8X)
	"strings"

	"github.com/llmbench/llmbench/internal/safetext"
)

// Images in prompts. The engine reads an image's size from its header (image.DecodeConfig:
// PNG, JPEG, GIF, WebP; no pixel is decoded) and prices it with the model's vision rule
// (perf.Vision, perf.DefaultVision for the built-in profiles): its tokens join the prompt, and
// the vision encoder's work runs in the step that starts the request's prefill. Images arrive
// as data URLs (OpenAI image_url / input_image parts) or base64 sources (Anthropic image
// blocks); the engine fetches nothing from the network, so an http(s) URL is refused.

// maxImages bounds the images of one message.
const maxImages = 64

// imageInfo is what the engine needs of an image: its size and a hash of its bytes.
type imageInfo struct {
	width, height int
	hash          uint64
}

// decodeImagePart reads the image of an image_url, input_image or image part.
func decodeImagePart(p *wirePart, at string) (imageInfo, *apiError) {
	var data string
	switch p.Type {
	case "image":
		if p.Source == nil || p.Source.Type != "base64" {
			return imageInfo{}, badRequest(at+".source", `an image block needs "source": {"type":"base64","media_type":...,"data":...}`)
		}
		data = p.Source.Data
	default:
		raw := bytes.TrimSpace(p.ImageURL)
		var url string
		switch {
		case len(raw) > 0 && raw[0] == '"':
			json.Unmarshal(raw, &url)
		case len(raw) > 0 && raw[0] == '{':
			var u struct {
				URL string `json:"url"`
			}
			json.Unmarshal(raw, &u)
			url = u.URL
		}
		if url == "" {
			return imageInfo{}, badRequest(at+".image_url", "the image part has no image_url")
		}
		if !strings.HasPrefix(url, "data:") {
			return imageInfo{}, badRequest(at+".image_url", "only data: URLs are accepted (the engine fetches nothing), got %s", safetext.Quote(url, 60))
		}
		meta, payload, ok := strings.Cut(url[len("data:"):], ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return imageInfo{}, badRequest(at+".image_url", "the data URL must be data:<media type>;base64,<data>")
		}
		data = payload
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return imageInfo{}, badRequest(at, "the image data is not valid base64: %v", err)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return imageInfo{}, badRequest(at, "the image is not a PNG, JPEG, GIF or WebP the engine can read: %v", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return imageInfo{}, badRequest(at, "the image is empty (%dx%d)", cfg.Width, cfg.Height)
	}
	return imageInfo{width: cfg.Width, height: cfg.Height, hash: hashString(fnvOffset, data)}, nil
}
