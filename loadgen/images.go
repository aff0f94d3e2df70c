package loadgen

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"os"
	"sync"

	"github.com/llmbench/llmbench/traces"
)

// MaxImageBytes bounds an image file a trace names (traces.MaxImageBytes).
const MaxImageBytes = traces.MaxImageBytes

// encodedImage is an image ready for a request body.
type encodedImage struct {
	mediaType string
	base64    string
	dataURL   string // data:<mediaType>;base64,<base64>
}

// imageCache encodes each image once per run: a file by its path, a synthetic image by its
// size. Traces reuse few distinct images, so the cache stays small; encoding ahead of the
// dispatcher (the preparer builds bodies) keeps it out of the schedule.
type imageCache struct {
	mu sync.Mutex
	m  map[imageKey]*imageEntry
}

type imageKey struct {
	file string
	w, h int
}

type imageEntry struct {
	once sync.Once
	img  encodedImage
	err  error
}

func (c *imageCache) get(im traces.Image) (encodedImage, error) {
	key := imageKey{file: im.Source()}
	if key.file == "" {
		key.w, key.h = im.Width, im.Height
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[imageKey]*imageEntry{}
	}
	e := c.m[key]
	if e == nil {
		e = &imageEntry{}
		c.m[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		var raw []byte
		mt := "image/jpeg"
		if key.file != "" {
			mt = traces.MediaType(key.file)
			if mt == "" {
				e.err = fmt.Errorf("image %s: not a .png, .jpg, .jpeg, .gif or .webp file", key.file)
				return
			}
			raw, e.err = readImage(key.file)
		} else {
			raw, e.err = syntheticImage(key.w, key.h)
		}
		if e.err != nil {
			return
		}
		b64 := base64.StdEncoding.EncodeToString(raw)
		e.img = encodedImage{mediaType: mt, base64: b64, dataURL: "data:" + mt + ";base64," + b64}
	})
	return e.img, e.err
}

func readImage(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxImageBytes+1))
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", path, err)
	}
	if len(b) > MaxImageBytes {
		return nil, fmt.Errorf("image %s: larger than %d bytes", path, MaxImageBytes)
	}
	return b, nil
}

// syntheticImage returns a JPEG of w × h pixels (1 to traces.MaxImageSide each): a smooth
// gradient with a fine checker pattern, the same bytes for the same size, so that it
// compresses about as a photograph does (a few bits per pixel) and a server decodes a real
// image of that resolution.
func syntheticImage(w, h int) ([]byte, error) {
	if w < 1 || h < 1 || w > traces.MaxImageSide || h > traces.MaxImageSide {
		return nil, fmt.Errorf("synthetic image %dx%d: each side must be 1 to %d pixels", w, h, traces.MaxImageSide)
	}
	img := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := uint8((x*255/max(w-1, 1) + y*255/max(h-1, 1)) / 2)
			if (x/4+y/4)%2 == 0 {
				v ^= 0x1f
			}
			img.Y[img.YOffset(x, y)] = v
		}
	}
	for i := range img.Cb {
		img.Cb[i], img.Cr[i] = 128+uint8(i%32), 128-uint8(i%16)
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 80}); err != nil {
		return nil, fmt.Errorf("synthetic image %dx%d: %w", w, h, err)
	}
	return buf.Bytes(), nil
}

// textless reports messages that carry images and no text at all (a generated multimodal
// trace): the replayer then synthesizes input_tokens tokens of text for them (withText).
func textless(ms []traces.Message) bool {
	images := false
	for _, m := range ms {
		if m.Content != "" {
			return false
		}
		images = images || len(m.Images) > 0
	}
	return images
}

// withText returns a copy of ms whose last message carries text.
func withText(ms []traces.Message, text string) []traces.Message {
	out := append([]traces.Message(nil), ms...)
	out[len(out)-1].Content = text
	return out
}
