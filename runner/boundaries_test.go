package runner

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/llmbench/llmbench/"

// goList runs go list with args from the module root and returns its output's lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestPackageBoundaries enforces the data flow of docs/ARCHITECTURE.md ("Packages"): loadgen
// never imports refengine (nor refengine loadgen, metrics or reports), metrics does no network
// I/O, only the adapters (runner/engineadapter), the use cases (usecase) and the CLI reach the
// reference engine, and neither the use cases nor the CLI do network I/O of their own. Every package of the module must have an entry, so
// that a new package states what it may not import.
func TestPackageBoundaries(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	// forbidden lists, per package, what it must not depend on, directly or through a
	// dependency.
	forbidden := map[string][]string{
		"calibrate":            {mod + "loadgen", mod + "reports", mod + "runner"},
		"cmd/llmbench":         {},
		"history":              {"net/http", mod + "loadgen", mod + "refengine", mod + "runner"},
		"internal/ksleep":      {"net", "net/http", mod + "loadgen", mod + "metrics", mod + "refengine", mod + "reports", mod + "runner"},
		"internal/hoststat":    {"net", "net/http", mod + "loadgen", mod + "metrics", mod + "refengine", mod + "reports", mod + "runner"},
		"internal/jsonschemax": {"net", "net/http", mod + "loadgen", mod + "metrics", mod + "refengine", mod + "reports", mod + "runner"},
		"internal/pgtest":      {"net/http", mod + "loadgen", mod + "metrics", mod + "refengine", mod + "reports", mod + "runner"},
		"internal/pipenet":     {"net/http", mod + "loadgen", mod + "metrics", mod + "refengine", mod + "reports", mod + "runner"},
		"internal/racebuild":   {"net", "net/http", mod + "loadgen", mod + "metrics", mod + "refengine", mod + "reports", mod + "runner"},
		"internal/progress":    {"net", "net/http", mod + "loadgen", mod + "metrics", mod + "refengine", mod + "runner"},
		"internal/redact":      {"net/http", mod + "loadgen", mod + "metrics", mod + "refengine", mod + "reports", mod + "runner"},
		"internal/safetext":    {"net", "net/http", mod + "loadgen", mod + "metrics", mod + "refengine", mod + "reports", mod + "runner"},
		"internal/perfgate":    {"net", "net/http", mod + "loadgen", mod + "refengine", mod + "reports", mod + "runner", mod + "internal/selfbench"},
		"internal/reaper":      {"net", "net/http", mod + "loadgen", mod + "metrics", mod + "refengine", mod + "reports", mod + "runner", mod + "usecase"},
		"internal/selfbench":   {mod + "refengine", mod + "runner", mod + "reports"},
		"internal/tokstub":     {mod + "loadgen", mod + "metrics", mod + "refengine", mod + "reports", mod + "runner"},
		"internal/k8stest":     {mod + "loadgen", mod + "metrics", mod + "refengine", mod + "reports", mod + "runner", mod + "traces"},
		"internal/gguf":        {"net", "net/http", mod + "loadgen", mod + "metrics", mod + "refengine", mod + "reports", mod + "runner", mod + "traces"},
		"internal/realserver":  {mod + "loadgen", mod + "metrics", mod + "refengine", mod + "reports", mod + "runner", mod + "traces", mod + "usecase"},
		"k8srun":               {mod + "loadgen", mod + "metrics", mod + "refengine", mod + "reports", mod + "runner", mod + "traces"},
		"k8sjob":               {mod + "loadgen", mod + "metrics", mod + "refengine", mod + "reports", mod + "runner", mod + "traces"},
		"loadgen":              {mod + "refengine", mod + "reports", mod + "runner"},
		"metrics":              {"net/http", "net", mod + "loadgen", mod + "refengine", mod + "reports"},
		"plan":                 {mod + "loadgen", mod + "runner", mod + "traces"},
		"quality":              {"net", "net/http", mod + "loadgen", mod + "refengine", mod + "reports", mod + "runner"},
		"quality/judge":        {mod + "loadgen", mod + "refengine", mod + "reports", mod + "runner"},
		"refengine":            {mod + "loadgen", mod + "metrics", mod + "reports", mod + "runner", mod + "traces"},
		"refengine/perf":       {"net", "net/http", mod + "loadgen", mod + "metrics", mod + "reports", mod + "traces"},
		"reports":              {"net/http", mod + "loadgen", mod + "refengine"},
		"runner":               {mod + "refengine"},
		"runner/engineadapter": {mod + "cmd/llmbench"},
		"tokenizer":            {"net/http", mod + "loadgen", mod + "refengine"},
		"traces":               {"net/http", mod + "loadgen", mod + "metrics"},
		"usecase":              {"github.com/spf13/cobra", mod + "cmd/llmbench"},
		"workloads":            {"net/http", mod + "loadgen", mod + "metrics"},
	}
	// reachEngine are the only packages allowed to depend on refengine.
	reachEngine := []string{"refengine", "refengine/perf", "runner/engineadapter", "calibrate", "plan", "usecase", "cmd/llmbench"}
	// noNetwork packages must not import net or net/http directly (cmd parses flags and prints;
	// servers and clients live in packages).
	noNetwork := []string{"cmd/llmbench", "usecase", "k8sjob", "calibrate", "plan"}
	// adapterUsers are the only packages allowed to import runner/engineadapter.
	adapterUsers := []string{"usecase", "cmd/llmbench"}

	pkgs := goList(t, "./...")
	for _, p := range pkgs {
		rel := strings.TrimPrefix(p, mod)
		bad, ok := forbidden[rel]
		if !ok {
			t.Errorf("package %s has no entry in TestPackageBoundaries: add what it must not import", rel)
			continue
		}
		deps := map[string]bool{}
		for _, d := range goList(t, "-deps", "./"+rel) {
			deps[d] = true
		}
		for _, b := range bad {
			if deps[b] {
				t.Errorf("%s imports %s (directly or through a dependency)", rel, b)
			}
		}
		if deps[mod+"refengine"] && !slices.Contains(reachEngine, rel) {
			t.Errorf("%s depends on refengine: only %v may (adapters live in runner/engineadapter)", rel, reachEngine)
		}
		imports := goList(t, "-f", `{{join .Imports "\n"}}`, "./"+rel)
		if slices.Contains(noNetwork, rel) {
			for _, n := range []string{"net", "net/http"} {
				if slices.Contains(imports, n) {
					t.Errorf("%s imports %s: network I/O belongs in a package, not the CLI", rel, n)
				}
			}
		}
		// usecase builds options without flag parsing: no pflag of its own (client-go's
		// clientcmd, which k8srun uses to read a kubeconfig, brings pflag in indirectly).
		if rel == "usecase" && slices.Contains(imports, "github.com/spf13/pflag") {
			t.Errorf("usecase imports pflag: flags are parsed in cmd/llmbench, which fills usecase's options")
		}
		if slices.Contains(imports, mod+"runner/engineadapter") && !slices.Contains(adapterUsers, rel) {
			t.Errorf("%s imports runner/engineadapter: only %v may", rel, adapterUsers)
		}
	}
	for rel := range forbidden {
		if !slices.Contains(pkgs, mod+rel) {
			t.Errorf("TestPackageBoundaries names %s, which is not a package of the module", rel)
		}
	}
}

// TestCLIImports keeps cmd/llmbench to flags → an options struct → one call (docs/ARCHITECTURE.md,
// "Packages"): besides the standard library, cobra/pflag and x/term it may import only
// cliAllowed (the use cases and their options types).
func TestCLIImports(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	cliAllowed := []string{
		mod + "usecase", // every command's Options and use case
		mod + "history", // history's commands: its AddArgs, CheckArgs, … and Run* are already options and use cases
	}
	// cobra and pflag parse the command line; x/term says whether stderr is a terminal and
	// how wide (term.go).
	thirdParty := []string{"github.com/spf13/cobra", "github.com/spf13/pflag", "golang.org/x/term"}
	imports := goList(t, "-f", `{{join .Imports "\n"}}`, "./cmd/llmbench")
	for _, p := range imports {
		first, _, _ := strings.Cut(p, "/")
		switch {
		case !strings.Contains(first, "."): // the standard library
		case slices.Contains(thirdParty, p), slices.Contains(cliAllowed, p):
		case strings.HasPrefix(p, mod):
			t.Errorf("cmd/llmbench imports %s: its logic belongs in a use case of package usecase, which cmd calls with an options struct", p)
		default:
			t.Errorf("cmd/llmbench imports %s: the CLI uses only the standard library, cobra, pflag and x/term", p)
		}
	}
}

// TestPackageMap checks that the package table of docs/ARCHITECTURE.md ("Packages") lists
// exactly the module's packages, as `go list ./...` prints them: a new package gets a row, a
// removed one loses its row.
func TestPackageMap(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	doc, err := os.ReadFile("../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "\n## Packages\n")
	end := strings.Index(text, "\n## Following one Record")
	if start < 0 || end < start {
		t.Fatal(`docs/ARCHITECTURE.md: no "## Packages" section before "## Following one Record"`)
	}
	var table []string
	for _, line := range strings.Split(text[start:end], "\n") {
		if rest, ok := strings.CutPrefix(line, "| `"); ok {
			name, _, _ := strings.Cut(rest, "`")
			table = append(table, name)
		}
	}
	var pkgs []string
	for _, p := range goList(t, "./...") {
		pkgs = append(pkgs, strings.TrimPrefix(p, mod))
	}
	for _, p := range pkgs {
		if !slices.Contains(table, p) {
			t.Errorf("docs/ARCHITECTURE.md's package table has no row for %s", p)
		}
	}
	for _, p := range table {
		if !slices.Contains(pkgs, p) {
			t.Errorf("docs/ARCHITECTURE.md's package table lists %s, which is not a package of the module", p)
		}
	}
	if len(table) != len(pkgs) {
		t.Errorf("the package table has %d rows for %d packages", len(table), len(pkgs))
	}
}
