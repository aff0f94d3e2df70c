package tokenizer

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Decode returns the text of ids: added tokens as written (non-special ones of
// SentencePiece-style files with "▁" turned back into spaces), model tokens with the
// byte-level mapping, the "▁" replacement and <0xNN> byte fallback undone, and the prefix
// that a Prepend normalizer, a Metaspace pre-tokenizer or ByteLevel's add_prefix_space put at
// the start of each segment removed. Ids outside the vocabulary are skipped.
//
// Decode(Encode(s)) == s for byte-level files when the normalizer leaves s unchanged (Qwen's
// NFC changes non-NFC text) and no lstrip/rstrip added token swallowed whitespace; for
// SentencePiece-style files it also needs s free of "▁" and, with a Metaspace pre-tokenizer,
// not starting with a space (that space is ambiguous, as in the Hugging Face library). For
// ids made by Encode, Encode(Decode(ids)) == ids in the same cases and whenever the text had
// no "▁"; prompt synthesis can rely on that to fit a text to an exact count.
func (h *HF) Decode(ids []int) string {
	var out strings.Builder
	var run []byte
	atTextStart := true // the current run of model tokens begins the text
	flush := func() {
		if len(run) == 0 {
			return
		}
		s := string(run)
		if !h.byteLevel {
			s = h.undoReplace(s)
		}
		// Each run is one segment between added tokens.
		if h.segPrefix != "" && (!h.prefixFirstOnly || atTextStart) {
			s = strings.TrimPrefix(s, h.segPrefix)
		}
		out.WriteString(s)
		run = run[:0]
	}
	for _, id := range ids {
		if content, ok := h.addedID[id]; ok {
			flush()
			if h.addedPlain[id] && !h.byteLevel {
				content = h.undoReplace(content) // Gemma's "▁▁" whitespace tokens
			}
			out.WriteString(content)
			atTextStart = false
			continue
		}
		if id >= 0 && id < len(h.tokens) && h.tokens[id] != "" {
			run = h.appendToken(run, h.tokens[id])
		}
	}
	flush()
	return out.String()
}

// appendToken appends the bytes of one model token.
func (h *HF) appendToken(b []byte, tok string) []byte {
	if h.byteLevel {
		back := byteRuneTables().bytes
		for _, r := range tok {
			if c, ok := back[r]; ok {
				b = append(b, c)
			} else {
				b = utf8.AppendRune(b, r)
			}
		}
		return b
	}
	if h.byteFallback && len(tok) == 6 && strings.HasPrefix(tok, "<0x") && tok[5] == '>' {
		if v, err := strconv.ParseUint(tok[3:5], 16, 8); err == nil {
			return append(b, byte(v))
		}
	}
	return append(b, tok...)
}
