package k8stest

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Container is one container the agent runs: its command line with $(VAR) references
// expanded and every argument under a volume's mount path mapped to the volume's local
// directory, its environment, and where its output goes (the log the API serves).
type Container struct {
	Namespace, Pod, Name string
	Args                 []string
	Env                  map[string]string
	Stdout               io.Writer
}

// Agent stands in for a kubelet on one node: it binds every unscheduled pod to its node,
// runs each pod's init containers and then its containers with Run, and writes their states
// and the pod's phase to the API; it serves the containers' logs where the apiserver asks a
// kubelet for them. ConfigMap volumes become directories holding the keys, emptyDir volumes
// empty directories, and a PersistentVolumeClaim one directory per claim shared by every pod.
type Agent struct {
	// Run runs one container to its end and returns its exit code; ctx ends when the pod is
	// deleted.
	Run func(ctx context.Context, c Container) int
	// Unpullable reports images that cannot be pulled: their pods wait with ErrImagePull.
	Unpullable func(image string) bool
	// Node is the node's name (default "agent").
	Node string

	api  API
	dir  string
	srv  *httptest.Server
	mu   sync.Mutex
	logs map[string]*logBuf
	pods map[types.UID]*podRun
}

type podRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// NewAgent starts the agent's log endpoint; pass CA() to Start, then call Attach.
func NewAgent(t testing.TB) *Agent {
	a := &Agent{Node: "agent", dir: t.TempDir(), logs: map[string]*logBuf{}, pods: map[types.UID]*podRun{}}
	a.srv = httptest.NewTLSServer(http.HandlerFunc(a.serveLog))
	t.Cleanup(a.srv.Close)
	return a
}

// CA is the PEM certificate of the agent's log endpoint, for the apiserver to trust.
func (a *Agent) CA() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.srv.Certificate().Raw})
}

// Claim is the local directory of a PersistentVolumeClaim's volume.
func (a *Agent) Claim(name string) string { return filepath.Join(a.dir, "claims", name) }

// Attach registers the node and runs the agent until the test ends.
func (a *Agent) Attach(t testing.TB, api API) {
	t.Helper()
	a.api = api
	port, _ := strconv.Atoi(a.srv.URL[strings.LastIndexByte(a.srv.URL, ':')+1:])
	ctx, cancel := context.WithCancel(context.Background())
	node := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: a.Node}}
	if err := api.create(ctx, nodesR, "", node); err != nil {
		t.Fatal(err)
	}
	if err := api.get(ctx, nodesR, "", a.Node, node); err != nil {
		t.Fatal(err)
	}
	node.Status = corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
		Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
	}
	if err := api.updateStatus(ctx, nodesR, "", node); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { a.loop(ctx); close(stopped) }()
	t.Cleanup(func() {
		cancel()
		<-stopped
		a.mu.Lock()
		runs := a.pods
		a.mu.Unlock()
		for _, r := range runs {
			r.cancel()
			<-r.done
		}
	})
}

// loop looks at the pods ten times a second, as a kubelet's sync loop would.
func (a *Agent) loop(ctx context.Context) {
	for {
		if list, err := a.api.Pods(ctx, "", ""); err == nil {
			for i := range list {
				a.sync(ctx, &list[i])
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (a *Agent) sync(ctx context.Context, p *corev1.Pod) {
	a.mu.Lock()
	run := a.pods[p.UID]
	a.mu.Unlock()
	switch {
	case p.DeletionTimestamp != nil:
		if run != nil {
			run.cancel()
			select {
			case <-run.done:
			default:
				return // still stopping
			}
		}
		a.api.deletePod(ctx, p.Namespace, p.Name)
	case p.Spec.NodeName == "":
		a.api.create(ctx, podsR, p.Namespace, &corev1.Binding{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: a.Node}}, "binding")
	case p.Spec.NodeName != a.Node || run != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
	case a.unpullable(p):
		if len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Waiting != nil {
			return // reported
		}
		a.setStatus(ctx, p, func(s *corev1.PodStatus) {
			s.Phase = corev1.PodPending
			s.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull",
					Message: fmt.Sprintf("failed to pull image %q: not found", p.Spec.Containers[0].Image)}}}}
		})
	default:
		rctx, cancel := context.WithCancel(ctx)
		r := &podRun{cancel: cancel, done: make(chan struct{})}
		a.mu.Lock()
		a.pods[p.UID] = r
		a.mu.Unlock()
		go func() { defer close(r.done); a.runPod(rctx, p.DeepCopy()) }()
	}
}

func (a *Agent) unpullable(p *corev1.Pod) bool {
	if a.Unpullable == nil {
		return false
	}
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		if a.Unpullable(c.Image) {
			return true
		}
	}
	return false
}

// runPod runs the init containers, then the containers, and reports the pod's end.
func (a *Agent) runPod(ctx context.Context, p *corev1.Pod) {
	vols, err := a.volumes(ctx, p)
	if err != nil {
		a.finish(ctx, p, nil, "CreateContainerConfigError", err.Error())
		return
	}
	var states []corev1.ContainerStatus
	for _, c := range p.Spec.InitContainers {
		code := a.runContainer(ctx, p, c, vols)
		if code != 0 {
			a.finish(ctx, p, []corev1.ContainerStatus{terminated(c, code)}, "", "")
			return
		}
	}
	a.setStatus(ctx, p, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodRunning
		s.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			s.ContainerStatuses = append(s.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}})
		}
	})
	for _, c := range p.Spec.Containers {
		states = append(states, terminated(c, a.runContainer(ctx, p, c, vols)))
	}
	a.finish(ctx, p, states, "", "")
}

func terminated(c corev1.Container, code int) corev1.ContainerStatus {
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	return corev1.ContainerStatus{Name: c.Name, Image: c.Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(code), Reason: reason, FinishedAt: metav1.Now()}}}
}

// finish writes the pod's last phase: Succeeded when every container exited 0.
func (a *Agent) finish(ctx context.Context, p *corev1.Pod, states []corev1.ContainerStatus, reason, msg string) {
	phase := corev1.PodSucceeded
	if reason != "" || len(states) == 0 {
		phase = corev1.PodFailed
	}
	for _, s := range states {
		if s.State.Terminated == nil || s.State.Terminated.ExitCode != 0 {
			phase = corev1.PodFailed
		}
	}
	a.setStatus(context.WithoutCancel(ctx), p, func(s *corev1.PodStatus) {
		s.Phase, s.Reason, s.Message, s.ContainerStatuses = phase, reason, msg, states
	})
}

func (a *Agent) runContainer(ctx context.Context, p *corev1.Pod, c corev1.Container, vols map[string]string) int {
	env, err := a.env(ctx, p, c)
	if err != nil {
		return 128
	}
	argv := append(append([]string{}, c.Command...), c.Args...)
	for i, s := range argv {
		argv[i] = mapPath(expand(s, env), c.VolumeMounts, vols)
	}
	log := &logBuf{}
	a.mu.Lock()
	a.logs[p.Namespace+"/"+p.Name+"/"+c.Name] = log
	a.mu.Unlock()
	return a.Run(ctx, Container{Namespace: p.Namespace, Pod: p.Name, Name: c.Name, Args: argv, Env: env, Stdout: log})
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand replaces $(VAR) with VAR's value where VAR is set, as the kubelet does.
func expand(s string, env map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// mapPath maps an argument under a mount path to the volume's local directory.
func mapPath(arg string, mounts []corev1.VolumeMount, vols map[string]string) string {
	for _, m := range mounts {
		if arg == m.MountPath || strings.HasPrefix(arg, m.MountPath+"/") {
			return filepath.Join(vols[m.Name], strings.TrimPrefix(arg, m.MountPath))
		}
	}
	return arg
}

// env resolves the container's variables: values, and references to the pod's fields.
func (a *Agent) env(ctx context.Context, p *corev1.Pod, c corev1.Container) (map[string]string, error) {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expand(e.Value, env)
		case e.ValueFrom.FieldRef != nil:
			env[e.Name] = field(p, e.ValueFrom.FieldRef.FieldPath)
		case e.ValueFrom.SecretKeyRef != nil:
			var s corev1.Secret
			if err := a.api.get(ctx, secretsR, p.Namespace, e.ValueFrom.SecretKeyRef.Name, &s); err != nil {
				return nil, err
			}
			env[e.Name] = string(s.Data[e.ValueFrom.SecretKeyRef.Key])
		}
	}
	return env, nil
}

var fieldKey = regexp.MustCompile(`^metadata\.(annotations|labels)\['(.+)'\]$`)

func field(p *corev1.Pod, path string) string {
	if m := fieldKey.FindStringSubmatch(path); m != nil {
		if m[1] == "annotations" {
			return p.Annotations[m[2]]
		}
		return p.Labels[m[2]]
	}
	switch path {
	case "metadata.name":
		return p.Name
	case "metadata.namespace":
		return p.Namespace
	case "spec.nodeName":
		return p.Spec.NodeName
	}
	return ""
}

// volumes makes each volume's local directory.
func (a *Agent) volumes(ctx context.Context, p *corev1.Pod) (map[string]string, error) {
	vols := map[string]string{}
	for _, v := range p.Spec.Volumes {
		dir := filepath.Join(a.dir, "pods", string(p.UID), v.Name)
		switch {
		case v.PersistentVolumeClaim != nil:
			dir = a.Claim(v.PersistentVolumeClaim.ClaimName)
		case v.ConfigMap != nil:
			var cm corev1.ConfigMap
			if err := a.api.get(ctx, configMapsR, p.Namespace, v.ConfigMap.Name, &cm); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			for k, s := range cm.Data {
				os.WriteFile(filepath.Join(dir, k), []byte(s), 0o644)
			}
			for k, b := range cm.BinaryData {
				os.WriteFile(filepath.Join(dir, k), b, 0o644)
			}
		case v.EmptyDir == nil:
			return nil, fmt.Errorf("volume %s: the test agent supports ConfigMap, emptyDir and PersistentVolumeClaim volumes", v.Name)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		vols[v.Name] = dir
	}
	return vols, nil
}

// setStatus changes the pod's status, retrying on a conflict with another writer.
func (a *Agent) setStatus(ctx context.Context, p *corev1.Pod, change func(*corev1.PodStatus)) {
	for range 10 {
		var cur corev1.Pod
		if err := a.api.get(ctx, podsR, p.Namespace, p.Name, &cur); err != nil {
			return
		}
		change(&cur.Status)
		if err := a.api.updateStatus(ctx, podsR, p.Namespace, &cur); !apierrors.IsConflict(err) {
			return
		}
	}
}

// serveLog answers the apiserver's /containerLogs/NAMESPACE/POD/CONTAINER requests
// (tailLines honoured), as a kubelet does.
func (a *Agent) serveLog(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	a.mu.Lock()
	log := a.logs[strings.Join(parts, "/")]
	a.mu.Unlock()
	if log == nil {
		http.Error(w, "container not found", http.StatusNotFound)
		return
	}
	text := log.String()
	if n, err := strconv.Atoi(r.URL.Query().Get("tailLines")); err == nil && n >= 0 {
		lines := strings.SplitAfter(text, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		text = strings.Join(lines[max(0, len(lines)-n):], "")
	}
	io.WriteString(w, text)
}

func createNamespace(t testing.TB, api API, name string) {
	t.Helper()
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := api.create(context.Background(), namespacesR, "", ns); err != nil {
		t.Fatal(err)
	}
}
