package traces

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmbench/llmbench/internal/safetext"
)

// Images (multimodal requests). A chat message may carry images, each either a file (sent as
// a data URL) or a synthetic image of a given resolution that the replayer generates itself:
//
//	{"role":"user","content":"What is in the picture?","images":[{"path":"img/cat.png"},{"width":1024,"height":768}]}
//
// Paths are relative to the trace file's directory. See FORMAT.md, "Images".

// fImages is the message field that holds images.
const fImages = "images"

// Bounds of an image in trace format v1.
const (
	// MaxImagesPerMessage bounds the images of one message.
	MaxImagesPerMessage = 64
	// MaxImageSide bounds a synthetic image's width and height, in pixels.
	MaxImageSide = 8192
	// MaxImageBytes bounds an image file a trace names: a larger one is refused rather than
	// read into every request body or hashed for the simulated prefix cache (hosted APIs take
	// 20 MB at most).
	MaxImageBytes = 20 << 20
)

// imageTypes maps the file extensions an image path may have to the media type it is sent as.
var imageTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
}

// Image is one image of a message: a file (Path) or a synthetic image (Width × Height).
type Image struct {
	// Path is the image file as the trace gives it (relative to the trace file).
	Path string `json:"path,omitempty" msgpack:"path,omitempty"`
	// Width and Height are a synthetic image's size in pixels (both set, Path empty).
	Width  int `json:"width,omitempty" msgpack:"width,omitempty"`
	Height int `json:"height,omitempty" msgpack:"height,omitempty"`
	// File is Path resolved against the trace file's directory when the trace was read (Path
	// itself for a Request built in code).
	File string `json:"-" msgpack:"-"`
}

// Source returns the file to read: File, else Path.
func (im Image) Source() string {
	if im.File != "" {
		return im.File
	}
	return im.Path
}

// MediaType is the media type of an image file, from its extension ("" when not one of
// imageTypes).
func MediaType(path string) string { return imageTypes[strings.ToLower(filepath.Ext(path))] }

// traceDir is the directory image paths of the trace name are relative to.
func traceDir(name string) string {
	if name == "" || name == "-" || strings.HasPrefix(name, "<") {
		return ""
	}
	return filepath.Dir(name)
}

func decodeImages(v any, at string, opts ReadOptions) ([]Image, []fieldError) {
	arr, ok := v.([]any)
	if !ok {
		return nil, []fieldError{{at, `must be an array of {"path"} or {"width","height"} objects (got ` + describe(v) + ")"}}
	}
	if len(arr) > MaxImagesPerMessage {
		return nil, []fieldError{{at, fmt.Sprintf("must hold at most %d images (got %d)", MaxImagesPerMessage, len(arr))}}
	}
	var errs []fieldError
	out := make([]Image, 0, len(arr))
	for i, e := range arr {
		el := fmt.Sprintf("%s[%d]", at, i)
		obj, ok := asObject(e)
		if !ok {
			errs = append(errs, fieldError{el, `must be an object {"path"} or {"width","height"} (got ` + describe(e) + ")"})
			continue
		}
		var im Image
		var havePath, haveW, haveH bool
		side := fmt.Sprintf("must be an integer from 1 to %d (pixels)", MaxImageSide)
		for _, kv := range obj {
			var why string
			switch kv.key {
			case "path":
				havePath = true
				im.Path, why = stringField(kv.val, true, "must be a non-empty string (an image file, relative to the trace file)")
			case "width":
				haveW = true
				var n int64
				n, why = boundedInt(kv.val, 1, MaxImageSide, side, side)
				im.Width = int(n)
			case "height":
				haveH = true
				var n int64
				n, why = boundedInt(kv.val, 1, MaxImageSide, side, side)
				im.Height = int(n)
			default:
				if !opts.Lenient {
					why = "unknown field (an image has path, or width and height; read with --lenient to ignore others)"
				}
			}
			if why != "" {
				errs = append(errs, fieldError{el + "." + kv.key, why})
			}
		}
		switch {
		case havePath && (haveW || haveH):
			errs = append(errs, fieldError{el, "give path (an image file) or width and height (a synthetic image), not both"})
		case !havePath && !(haveW && haveH):
			errs = append(errs, fieldError{el, `needs "path" (an image file) or both "width" and "height" (a synthetic image)`})
		case havePath && im.Path != "":
			if why := im.resolve(opts.dir); why != "" {
				errs = append(errs, fieldError{el + ".path", why})
			}
		}
		out = append(out, im)
	}
	return out, errs
}

// resolve sets File from Path and dir and checks that it names a readable image file.
func (im *Image) resolve(dir string) string {
	if MediaType(im.Path) == "" {
		return "must end in .png, .jpg, .jpeg, .gif or .webp (got " + quoteShort(im.Path) + ")"
	}
	im.File = im.Path
	if !filepath.IsAbs(im.Path) && dir != "" {
		im.File = filepath.Join(dir, im.Path)
	}
	st, err := os.Stat(im.File)
	switch {
	case err != nil:
		return "cannot read " + quoteShort(im.Path) + " (paths are relative to the trace file): " + describeErr(err)
	case !st.Mode().IsRegular():
		return quoteShort(im.Path) + " is not a regular file"
	}
	return ""
}

func quoteShort(s string) string { return safetext.Quote(s, 120) }

func describeErr(err error) string {
	switch {
	case os.IsNotExist(err):
		return "no such file"
	case os.IsPermission(err):
		return "permission denied"
	}
	return "unreadable"
}

// ImageCount is the number of images of a request's messages.
func (r *Request) ImageCount() int {
	n := 0
	for _, m := range r.Messages {
		n += len(m.Images)
	}
	return n
}

// rebaseImages returns reqs with the image paths of files read from another directory made
// relative to dir (the directory of the trace being written), so that a transformed trace
// written elsewhere still finds its images; reqs itself is not modified. A path that cannot
// be made relative is written absolute.
func rebaseImages(reqs []Request, dir string) []Request {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return reqs
	}
	var out []Request
	for i := range reqs {
		changed := false
		for _, m := range reqs[i].Messages {
			for _, im := range m.Images {
				if im.File != "" && rebased(im, absDir) != im.Path {
					changed = true
				}
			}
		}
		if !changed {
			continue
		}
		if out == nil {
			out = append([]Request(nil), reqs...)
		}
		r := &out[i]
		r.Messages = append([]Message(nil), r.Messages...)
		for j := range r.Messages {
			m := &r.Messages[j]
			m.Images = append([]Image(nil), m.Images...)
			for k := range m.Images {
				if m.Images[k].File != "" {
					m.Images[k].Path = rebased(m.Images[k], absDir)
				}
			}
		}
	}
	if out == nil {
		return reqs
	}
	return out
}

func rebased(im Image, absDir string) string {
	abs, err := filepath.Abs(im.File)
	if err != nil {
		return im.Path
	}
	if rel, err := filepath.Rel(absDir, abs); err == nil {
		return filepath.ToSlash(rel)
	}
	return abs
}
