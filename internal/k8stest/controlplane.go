// Package k8stest gives tests a real Kubernetes control plane on loopback: etcd, a
// kube-apiserver and a kube-controller-manager running the Job and garbage-collector
// controllers, plus Agent, a small node agent that stands in for the kubelet (no kubelet can
// run here): it binds pods to its node, runs their containers as local commands and reports
// their phases and logs through the API. It is for tests only.
//
// The binaries come from $LLMBENCH_K8S_BIN, else the cache .ci/k8s-controlplane.sh builds
// (~/.cache/llmbench/k8s/VERSION/bin), and etcd from $PATH (Debian's etcd-server). Without
// them a test is skipped with a message, except under CI=true, where it fails.
package k8stest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// Version is the Kubernetes release .ci/k8s-controlplane.sh builds.
const Version = "v1.37.2"

// BinEnv names a directory holding kube-apiserver and kube-controller-manager.
const BinEnv = "LLMBENCH_K8S_BIN"

// ControlPlane is a running etcd, kube-apiserver and kube-controller-manager.
type ControlPlane struct {
	// Kubeconfig is a kubeconfig file whose current context is the cluster, as admin, in
	// namespace Namespace (created).
	Kubeconfig string
	Namespace  string
	API        API
	URL        string
	dir        string
}

// binaries finds the three programs or skips (fails under CI=true) the test.
func binaries(t testing.TB) (apiserver, controllers, etcd string) {
	t.Helper()
	dir := os.Getenv(BinEnv)
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "llmbench", "k8s", Version, "bin")
	}
	apiserver, controllers = filepath.Join(dir, "kube-apiserver"), filepath.Join(dir, "kube-controller-manager")
	waitForBuild(t, dir, apiserver, controllers)
	etcd, etcdErr := exec.LookPath("etcd")
	var missing []string
	for _, p := range []string{apiserver, controllers} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if etcdErr != nil {
		missing = append(missing, "etcd on $PATH (Debian package etcd-server)")
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("no Kubernetes control plane: missing %v; build it with .ci/k8s-controlplane.sh (or set %s)", missing, BinEnv)
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s, and CI=true: the control-plane tests must run in CI", msg)
		}
		t.Skip(msg)
	}
	return apiserver, controllers, etcd
}

// WaitEnv, a duration, makes a test wait that long at most for binaries still being built:
// .ci/run builds the control plane in the background while the other tests run, and writes
// DIR.failed when the build fails.
const WaitEnv = "LLMBENCH_K8S_WAIT"

// waitForBuild waits (bounded by $LLMBENCH_K8S_WAIT) until the binaries exist or the build
// has failed; without the variable it returns at once.
func waitForBuild(t testing.TB, dir string, bins ...string) {
	t.Helper()
	limit, err := time.ParseDuration(os.Getenv(WaitEnv))
	if err != nil || limit <= 0 {
		return
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(dir + ".failed"); err == nil {
			return // the build failed: binaries reports what is missing
		}
		ready := true
		for _, b := range bins {
			if _, err := os.Stat(b); err != nil {
				ready = false
			}
		}
		if ready {
			return
		}
		t.Logf("waiting for the control-plane build (%s) to finish", dir)
		time.Sleep(5 * time.Second) // polling another process's build, not our code
	}
}

// Start runs a control plane for the test's lifetime. kubeletCA is the PEM certificate the
// apiserver trusts for the node agent's log endpoint (Agent.Serve's).
func Start(t testing.TB, kubeletCA []byte) *ControlPlane {
	t.Helper()
	apiserverBin, controllersBin, etcdBin := binaries(t)
	dir := t.TempDir()
	ports := freePorts(t, 3)
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	start(t, dir, "etcd", etcdBin, "--name", "t", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "t="+peerURL, "--log-level", "error")

	token := "admin-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	writeFile(t, filepath.Join(dir, "tokens.csv"), token+",admin,admin,system:masters\n")
	writeServiceAccountKey(t, dir)
	writeFile(t, filepath.Join(dir, "kubelet-ca.pem"), string(kubeletCA))
	cp := &ControlPlane{URL: "https://127.0.0.1:" + strconv.Itoa(ports[2]), Namespace: "bench", dir: dir}
	start(t, dir, "kube-apiserver", apiserverBin, "--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports[2]),
		"--advertise-address", "127.0.0.1", "--endpoint-reconciler-type", "none",
		"--cert-dir", filepath.Join(dir, "certs"), "--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--authorization-mode", "AlwaysAllow",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range", "10.96.0.0/24", "--disable-admission-plugins", "ServiceAccount",
		"--kubelet-certificate-authority", filepath.Join(dir, "kubelet-ca.pem"),
		"--kubelet-preferred-address-types", "InternalIP")
	waitReady(t, cp.URL+"/readyz", token)
	cp.Kubeconfig = filepath.Join(dir, "kubeconfig")
	writeFile(t, cp.Kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: %q}
contexts:
- name: test
  context: {cluster: test, user: admin, namespace: %s}
current-context: test
`, cp.URL, token, cp.Namespace))
	start(t, dir, "kube-controller-manager", controllersBin, "--kubeconfig", cp.Kubeconfig,
		"--controllers", "job-controller,garbage-collector-controller", "--leader-elect=false", "--secure-port", "0")
	cp.API = client(t, cp.Kubeconfig)
	createNamespace(t, cp.API, cp.Namespace)
	return cp
}

func client(t testing.TB, kubeconfig string) API {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return API{c}
}

// start runs a program until the test ends; its output goes to DIR/NAME.log, which a
// failing test prints.
func start(t testing.TB, dir, name, bin string, args ...string) {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
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
		log.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("%s's log (last 3000 bytes):\n%s", name, tail(b, 3000))
			}
		}
	})
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// waitReady polls the apiserver's readiness endpoint (bounded: 3 minutes on a loaded 2-core
// machine).
func waitReady(t testing.TB, url, token string) {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("kube-apiserver not ready at %s after 3 minutes", url)
		case <-time.After(250 * time.Millisecond): // polling an outside process's readiness
		}
	}
}

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeServiceAccountKey writes the key pair the apiserver signs service-account tokens with.
func writeServiceAccountKey(t testing.TB, dir string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sa.key"), string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	writeFile(t, filepath.Join(dir, "sa.pub"), string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})))
}

// freePorts are n loopback ports free a moment ago.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}
