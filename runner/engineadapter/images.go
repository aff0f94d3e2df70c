package engineadapter

import (
	"fmt"
	"hash/fnv"
	"image"
	_ "image/gif" // image.DecodeConfig reads the sizes of GIF, JPEG, PNG and WebP files
	_ "image/jpeg"
	_ "image/png"
	"io"
	"os"

	_ "golang.org/x/image/webp"

	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/traces"
)

// addImages gives each simulated request the images of its trace request, so that simulate
// prices them as the engine does over HTTP: a synthetic image by its size, a file by the size
// in its header (PNG, JPEG, GIF) and keyed by its bytes, as the engine keys an image by its data.
func addImages(sims []refengine.SimRequest, reqs []traces.Request) error {
	return imageFiles{}.add(sims, reqs)
}

// imageFiles remembers the image files already read (by path), so that a trace naming one
// file in many requests reads it once; a streamed simulation keeps one for the whole trace.
type imageFiles map[string]refengine.SimImage

// add is addImages with the files already read kept in files.
func (files imageFiles) add(sims []refengine.SimRequest, reqs []traces.Request) error {
	for i := range reqs {
		for _, m := range reqs[i].Messages {
			for _, im := range m.Images {
				if im.Source() == "" {
					h := fnv.New64a()
					fmt.Fprintf(h, "synthetic %dx%d", im.Width, im.Height)
					sims[i].Images = append(sims[i].Images, refengine.SimImage{Width: im.Width, Height: im.Height, Key: h.Sum64()})
					continue
				}
				si, ok := files[im.Source()]
				if !ok {
					var err error
					if si, err = fileImage(im.Source()); err != nil {
						return fmt.Errorf("request %s: %w", reqs[i].ID, err)
					}
					files[im.Source()] = si
				}
				sims[i].Images = append(sims[i].Images, si)
			}
		}
	}
	return nil
}

func fileImage(path string) (refengine.SimImage, error) {
	f, err := os.Open(path)
	if err != nil {
		return refengine.SimImage{}, fmt.Errorf("image: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > traces.MaxImageBytes {
		return refengine.SimImage{}, fmt.Errorf("image %s: not a regular file of at most %d bytes", path, traces.MaxImageBytes)
	}
	cfg, _, err := image.DecodeConfig(f)
	if err != nil {
		return refengine.SimImage{}, fmt.Errorf("image %s: not a PNG, JPEG, GIF or WebP whose size can be read: %v", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return refengine.SimImage{}, fmt.Errorf("image %s: %w", path, err)
	}
	h := fnv.New64a()
	if _, err := io.Copy(h, io.LimitReader(f, traces.MaxImageBytes)); err != nil {
		return refengine.SimImage{}, fmt.Errorf("image %s: %w", path, err)
	}
	return refengine.SimImage{Width: cfg.Width, Height: cfg.Height, Key: h.Sum64()}, nil
}
