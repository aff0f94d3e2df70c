// Package realserver gives tests a real inference server that nobody here wrote: Ollama
// (built by .ci/ollama.sh from the Go module proxy), started on a free loopback port with its
// own model store in a temporary directory, serving a tiny Llama model that package gguf
// writes and `ollama create` loads from a Modelfile, as users load models. The server is a
// process group stopped on every exit path, and its log is printed when the test fails. It is
// for tests only.
//
// The binary comes from $LLMBENCH_OLLAMA_BIN (a directory), else the cache .ci/ollama.sh
// builds (~/.cache/llmbench/ollama/VERSION/bin). Without it a test is skipped with a message,
// except under CI=true, where it fails. .ci/run builds it in the background; a test waits for
// that build at most $LLMBENCH_OLLAMA_WAIT and stops waiting when DIR.failed appears.
package realserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/gguf"
)

// Version is the Ollama release .ci/ollama.sh builds.
const Version = "v0.6.8"

// BinEnv names a directory holding the ollama binary.
const BinEnv = "LLMBENCH_OLLAMA_BIN"

// WaitEnv, a duration, makes a test wait that long at most for a binary still being built.
const WaitEnv = "LLMBENCH_OLLAMA_WAIT"

// Options shape the server and its model. Zero values take the defaults named per field.
type Options struct {
	// Model is the model's shape and seed; zero is gguf.TinyLlama().
	Model gguf.Llama
	// Parallel is OLLAMA_NUM_PARALLEL, the requests the server decodes at once (its slots);
	// 0 is 1.
	Parallel int
	// NumCtx is the context the server gives each request (the Modelfile's num_ctx); 0 is
	// 2048. Ollama truncates a longer prompt rather than refusing it.
	NumCtx int
	// Threads is the CPU threads the model runner computes with (the Modelfile's num_thread);
	// 0 is 1. ggml's threads meet at a barrier after every operation, so on a machine whose
	// cores are busy with other work one descheduled thread stalls the rest: on a shared 2-core
	// machine (load 28) two threads took 500 ms a token and one thread 2.7 ms.
	Threads int
	// Template is the Modelfile's chat template (Go text/template over .Messages); "" is
	// DefaultTemplate.
	Template string
}

// DefaultTemplate renders a chat as "role: content" lines and a final "assistant:", so a chat
// prompt costs more tokens than its text, as real chat templates do.
const DefaultTemplate = `{{- range .Messages }}{{ .Role }}: {{ .Content }}
{{ end }}assistant:`

// ModelName is the name the tests' model is created under.
const ModelName = "llmbench-tiny"

// Server is a running Ollama serving ModelName.
type Server struct {
	// URL is the server's base URL (http://127.0.0.1:PORT); its OpenAI-compatible API is under
	// /v1.
	URL   string
	Model string
	// Parallel and NumCtx are the slots and the per-request context the server was given.
	Parallel, NumCtx int
	// GGUF is the model file the server was created from.
	GGUF    string
	logPath string
}

// Binary returns the ollama binary's path, waiting for a background build when WaitEnv is
// set; it skips the test when there is none (fails under CI=true).
func Binary(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(BinEnv)
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "llmbench", "ollama", Version, "bin")
	}
	bin := filepath.Join(dir, "ollama")
	waitForBuild(t, dir, bin)
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("no Ollama server: %s is missing; build it with .ci/ollama.sh (or set %s)", bin, BinEnv)
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s, and CI=true: the real-server tests must run in CI", msg)
		}
		t.Skip(msg)
	}
	return bin
}

// waitForBuild waits (bounded by $LLMBENCH_OLLAMA_WAIT) until bin exists or the build has
// failed (DIR.failed); without the variable it returns at once.
func waitForBuild(t testing.TB, dir, bin string) {
	t.Helper()
	limit, err := time.ParseDuration(os.Getenv(WaitEnv))
	if err != nil || limit <= 0 {
		return
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(dir + ".failed"); err == nil {
			return
		}
		if _, err := os.Stat(bin); err == nil {
			return
		}
		t.Logf("waiting for the Ollama build (%s) to finish", dir)
		time.Sleep(5 * time.Second) // polling another process's build, not our code
	}
}

// Start writes the model, starts `ollama serve` on a free loopback port, creates the model
// from a Modelfile and loads it, all bounded in time; the server is stopped when the test
// ends, and its log printed if the test failed.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	bin := Binary(t)
	o = o.withDefaults()
	dir := t.TempDir()
	s := &Server{Model: ModelName, Parallel: o.Parallel, NumCtx: o.NumCtx, GGUF: filepath.Join(dir, "model.gguf"),
		logPath: filepath.Join(dir, "ollama.log")}
	if err := o.Model.WriteFile(s.GGUF); err != nil {
		t.Fatal(err)
	}
	host := "127.0.0.1:" + strconv.Itoa(freePort(t))
	s.URL = "http://" + host
	env := append(cleanEnv(), "HOME="+dir, "OLLAMA_HOST="+host, "OLLAMA_MODELS="+filepath.Join(dir, "models"),
		"OLLAMA_NUM_PARALLEL="+strconv.Itoa(o.Parallel), "OLLAMA_KEEP_ALIVE=-1", "OLLAMA_MAX_LOADED_MODELS=1",
		"OLLAMA_MAX_QUEUE=512", "OLLAMA_NOPRUNE=1", "OLLAMA_LOAD_TIMEOUT=3m")
	s.start(t, bin, env)
	s.waitUp(t)
	modelfile := filepath.Join(dir, "Modelfile")
	content := fmt.Sprintf("FROM %s\nPARAMETER num_ctx %d\nPARAMETER num_thread %d\nTEMPLATE \"\"\"%s\"\"\"\n",
		s.GGUF, o.NumCtx, o.Threads, o.Template)
	if err := os.WriteFile(modelfile, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	create := exec.CommandContext(ctx, bin, "create", s.Model, "-f", modelfile)
	create.Env, create.Dir = env, dir
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("ollama create %s -f %s: %v\n%s\nserver log:\n%s", s.Model, modelfile, err, out, s.Log(4000))
	}
	s.load(t)
	return s
}

func (o Options) withDefaults() Options {
	if o.Model == (gguf.Llama{}) {
		o.Model = gguf.TinyLlama()
	}
	if o.Parallel <= 0 {
		o.Parallel = 1
	}
	if o.NumCtx <= 0 {
		o.NumCtx = 2048
	}
	if o.Threads <= 0 {
		o.Threads = 1
	}
	if o.Template == "" {
		o.Template = DefaultTemplate
	}
	return o
}

// cleanEnv is the test's environment without any OLLAMA_ variable and without proxies, so
// neither a developer's settings nor a proxy reach the server.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "OLLAMA_"), strings.EqualFold(name, "HTTP_PROXY"),
			strings.EqualFold(name, "HTTPS_PROXY"), strings.EqualFold(name, "ALL_PROXY"), name == "HOME":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// start runs `ollama serve` in its own process group (the model runner it starts joins it)
// until the test ends: SIGTERM to the group, SIGKILL after 15 s.
func (s *Server) start(t testing.TB, bin string, env []string) {
	t.Helper()
	log, err := os.Create(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env, cmd.Dir = env, filepath.Dir(s.logPath)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		t.Fatalf("start %s serve: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // a runner left behind by the server
		log.Close()
		if t.Failed() {
			t.Logf("ollama serve's log (last 4000 bytes):\n%s", s.Log(4000))
		}
	})
}

// Log returns the last n bytes of the server's log.
func (s *Server) Log(n int) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// waitUp polls the server's root (bounded: 2 minutes on a loaded machine).
func (s *Server) waitUp(t testing.TB) {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if resp, err := hc.Get(s.URL + "/api/version"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ollama serve not up at %s after 2 minutes; log:\n%s", s.URL, s.Log(4000))
		}
		time.Sleep(100 * time.Millisecond) // polling an outside process's readiness
	}
}

// load asks the server to load the model now (a generate request without a prompt), so the
// first measured request does not pay for it.
func (s *Server) load(t testing.TB) {
	t.Helper()
	hc := &http.Client{Timeout: 3 * time.Minute}
	body := fmt.Sprintf(`{"model":%q,"keep_alive":-1}`, s.Model)
	resp, err := hc.Post(s.URL+"/api/generate", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("load %s: %v; log:\n%s", s.Model, err, s.Log(4000))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("load %s: HTTP %d; log:\n%s", s.Model, resp.StatusCode, s.Log(4000))
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
