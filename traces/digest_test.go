package traces

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSHA256(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(p, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if err := CheckSHA256(p, "sha256:"+strings.ToUpper(abc)); err != nil {
		t.Fatal(err)
	}
	if err := CheckSHA256(p, strings.Repeat("a", 64)); err == nil || !strings.Contains(err.Error(), "sha256 is "+abc) {
		t.Fatalf("mismatch: %v", err)
	}
	for _, bad := range []string{"", "xyz", strings.Repeat("g", 64), strings.Repeat("a", 63)} {
		if _, err := ParseSHA256(bad); err == nil {
			t.Errorf("ParseSHA256(%q) accepted", bad)
		}
	}
	if err := CheckSHA256(filepath.Join(t.TempDir(), "missing"), abc); err == nil {
		t.Fatal("missing file accepted")
	}
}
