package traces

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
)

// ParseSHA256 checks a SHA-256 digest given as 64 hexadecimal digits (either case, an optional
// "sha256:" prefix) and returns it in lower case.
func ParseSHA256(s string) (string, error) {
	h := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "sha256:")
	if len(h) != sha256.Size*2 {
		return "", fmt.Errorf("sha256 %q: want 64 hexadecimal digits", clip(s))
	}
	if _, err := hex.DecodeString(h); err != nil {
		return "", fmt.Errorf("sha256 %q: want 64 hexadecimal digits", clip(s))
	}
	return h, nil
}

// clip shortens what an error quotes.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// FileSHA256 is the SHA-256 of the file at path, in lower-case hex.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// CheckSHA256 refuses the file at path unless its SHA-256 is want (as ParseSHA256 accepts
// it): a trace shipped to another machine is checked before anything is sent from it.
func CheckSHA256(path, want string) error {
	w, err := ParseSHA256(want)
	if err != nil {
		return err
	}
	got, err := FileSHA256(path)
	if err != nil {
		return err
	}
	if got != w {
		return fmt.Errorf("%s: sha256 is %s, not the %s expected: the file is not the trace the run was planned with (changed, truncated, or another file)", path, got, w)
	}
	return nil
}
