package k8sjob

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/llmbench/llmbench/internal/redact"
	"github.com/llmbench/llmbench/internal/safetext"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// Options describe the sharded run. Zero values take the defaults named on each field.
type Options struct {
	// Name prefixes every object's name (default "llmbench"); it must be a DNS label of at
	// most 40 characters so that the derived names stay valid.
	Name      string
	Namespace string // "" = the namespace kubectl applies to
	// Image is the llmbench image (required), built from the repository's Dockerfile.
	Image string
	// TraceName is the trace's file name (its extension says JSONL or msgpack) and Trace its
	// bytes, shipped in a ConfigMap, which holds at most 1 MiB. A larger trace goes by
	// TraceURL or TraceVolume instead, and Trace is not needed.
	TraceName string
	Trace     []byte
	// TraceURL (http or https, no user info or query: the manifest is plain text) is where
	// the pods fetch the trace instead: an init container runs `llmbench trace fetch`, which
	// keeps it only if its digest is TraceSHA256.
	TraceURL string
	// TraceVolume, "CLAIM[:PATH]", names an existing PersistentVolumeClaim that holds the
	// trace at PATH (default TraceName), mounted read-only.
	TraceVolume string
	// TraceSHA256 is the trace's SHA-256 in hex (required with TraceURL or TraceVolume):
	// every shard and the merge check it before anything is sent (`run --trace-sha256`).
	TraceSHA256 string
	// Shards is the number of shard pods (>= 1).
	Shards int
	// StartAt is the common start of the shards (required).
	StartAt time.Time
	// Endpoint is the server under test (required: the shards share one target).
	Endpoint string
	// RunArgs are more `llmbench run` flags, passed to every shard as given. A manifest is
	// stored in the cluster in plain text, so flags that carry secrets (--header) are refused;
	// the API key comes from APIKeySecret.
	RunArgs []string
	// APIKeySecret, "NAME" or "NAME:KEY" (KEY defaults to "api-key"), names a Kubernetes
	// Secret holding the endpoint's API key: the shard pods read it into an environment
	// variable and pass it with --api-key-env, so the key is in no manifest.
	APIKeySecret string
	// Storage is the results volume's size (default "1Gi"); StorageClass its class ("" =
	// the cluster's default). The volume is ReadWriteMany: every shard pod writes to it.
	Storage      string
	StorageClass string
	// CPU is each shard pod's CPU request and limit (default "2"): llmbench sizes its
	// scheduler from the CPUs it may use. Every container of a shard pod, the trace's fetch
	// init container included, requests exactly this, so the pod's request is CPU; the merge
	// pod requests the smaller of CPU and 1.
	CPU string
	// Memory is each shard pod's memory request and limit, for every container as CPU ("":
	// none, the namespace's defaults apply); the merge pod's too.
	Memory string
	// StartGrace is how late past StartAt a shard may be ready and still start (run
	// --start-grace; 0: run's default). A later shard exits 4 without sending, and the Job's
	// pod failure policy then fails the whole Job: the shards start together or not at all.
	StartGrace time.Duration
}

// ClockCPU is the CPU request and limit of the clock reference's pod, which runs beside the
// shards for the whole run.
const ClockCPU = "100m"

// LateStartExit is the exit status of a shard that did not start in time (run's exit 4);
// the shards' Job fails as a whole when one exits with it.
const LateStartExit = 4

// Paths inside the pods.
const (
	traceDir   = "/trace"
	resultsDir = "/results"
	binary     = "/llmbench"
	clockPort  = 9000
	nonroot    = 65532 // distroless' nonroot user
	maxTrace   = 1 << 20
	clockWait  = "2m"
)

// The patterns are compiled on first use, not at every command's start: the bounded
// repetitions expand to hundreds of states (4,353 allocations, 417 KB at init before).
var dnsLabel = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`) })

// A Secret's name is a DNS subdomain; a key in it is letters, digits, '-', '_' and '.'.
var (
	dnsSubdomain = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`) })
	secretKey    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[-._a-zA-Z0-9]{1,253}$`) })
)

// apiKeyEnv is the variable the shard pods read the API key from (see Options.APIKeySecret).
const apiKeyEnv = "LLMBENCH_SHARD_API_KEY"

// checkNoSecrets refuses what would write a secret into the manifest: an endpoint with user
// info or a query (they may hold a key), and run flags that carry one (header values are
// treated as secrets everywhere in llmbench; see internal/redact).
func checkNoSecrets(endpoint string, args []string) error {
	if u, err := url.Parse(endpoint); err != nil {
		return fmt.Errorf("--endpoint %s: %v", safeQuote(redact.URL(endpoint)), err)
	} else if u.User != nil || u.RawQuery != "" {
		return fmt.Errorf("--endpoint %s: user info and query values may be secrets and a manifest is stored in plain text; give the key with --api-key-secret", safeQuote(redact.URL(endpoint)))
	}
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--header", "-H", "--api-key":
			return fmt.Errorf("%s after --: header values are secrets and a manifest is stored in the cluster in plain text; give the API key with --api-key-secret NAME[:KEY] (a Kubernetes Secret)", name)
		}
	}
	return nil
}

// checkTrace checks how the trace reaches the pods: in a ConfigMap, from a URL or on a volume.
func (o *Options) checkTrace() error {
	if o.TraceSHA256 != "" && !sha256Hex().MatchString(o.TraceSHA256) {
		return fmt.Errorf("trace sha256 %q: want 64 lower-case hexadecimal digits", safeQuote(o.TraceSHA256))
	}
	switch {
	case o.TraceURL != "" && o.TraceVolume != "":
		return errors.New("--trace-url and --trace-volume: give one way for the pods to get the trace")
	case o.TraceURL != "":
		u, err := url.Parse(o.TraceURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--trace-url %s: want an http:// or https:// URL the pods can reach", safeQuote(redact.URL(o.TraceURL)))
		}
		if u.User != nil || u.RawQuery != "" {
			return fmt.Errorf("--trace-url %s: user info and query values may be credentials and a manifest is stored in plain text; serve the trace where the pods may read it without them, or use --trace-volume", safeQuote(redact.URL(o.TraceURL)))
		}
	case o.TraceVolume != "":
		claim, p, _ := strings.Cut(o.TraceVolume, ":")
		if !dnsSubdomain().MatchString(claim) {
			return fmt.Errorf("--trace-volume %q: want CLAIM[:PATH], CLAIM the name of a PersistentVolumeClaim", safeQuote(o.TraceVolume))
		}
		if p != "" && (path.IsAbs(p) || path.Clean(p) != p || strings.HasPrefix(p, "..")) {
			return fmt.Errorf("--trace-volume %q: PATH must be a clean path relative to the volume's root", safeQuote(o.TraceVolume))
		}
	case len(o.Trace) == 0:
		return errors.New("the trace is empty")
	case len(o.Trace) > maxTrace:
		return fmt.Errorf("the trace is %d bytes, more than a ConfigMap holds (1 MiB): serve it over HTTP and pass --trace-url URL, or put it on a PersistentVolumeClaim and pass --trace-volume CLAIM[:PATH] (the pods check its sha256 before sending anything); msgpack (`llmbench trace convert`) is about half the size of JSONL", len(o.Trace))
	}
	if (o.TraceURL != "" || o.TraceVolume != "") && o.TraceSHA256 == "" {
		return errors.New("a trace shipped by URL or volume needs its sha256 (the CLI computes it from --trace)")
	}
	return nil
}

var sha256Hex = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })

func safeQuote(s string) string { return safetext.Quote(s, 200) }

func (o *Options) check() error {
	if o.Name == "" {
		o.Name = "llmbench"
	}
	if o.Storage == "" {
		o.Storage = "1Gi"
	}
	if o.CPU == "" {
		o.CPU = "2"
	}
	switch {
	case len(o.Name) > 40 || !dnsLabel().MatchString(o.Name):
		return fmt.Errorf("--name %q: want a DNS label (lower-case letters, digits, '-') of at most 40 characters", o.Name)
	case o.Image == "":
		return errors.New("--image is required: an image built from llmbench's Dockerfile")
	case o.Shards < 1:
		return fmt.Errorf("--shards %d: must be >= 1", o.Shards)
	case o.Endpoint == "":
		return errors.New("--endpoint is required: every shard sends to the same server")
	case o.StartAt.IsZero():
		return errors.New("a start time is required (--start-at or --start-in)")
	case o.TraceName == "" || path.Base(o.TraceName) != o.TraceName:
		return fmt.Errorf("trace name %q: want a file name", o.TraceName)
	}
	if err := o.checkTrace(); err != nil {
		return err
	}
	if err := checkNoSecrets(o.Endpoint, o.RunArgs); err != nil {
		return err
	}
	if o.APIKeySecret != "" {
		name, key, _ := strings.Cut(o.APIKeySecret, ":")
		if !dnsSubdomain().MatchString(name) || (key != "" && !secretKey().MatchString(key)) {
			return fmt.Errorf("--api-key-secret %q: want NAME or NAME:KEY of a Kubernetes Secret", safeQuote(o.APIKeySecret))
		}
	}
	if _, err := resource.ParseQuantity(o.Storage); err != nil {
		return fmt.Errorf("--storage %q: %w", o.Storage, err)
	}
	if q, err := resource.ParseQuantity(o.CPU); err != nil || q.Sign() <= 0 {
		return fmt.Errorf("--cpu %q: want a positive CPU quantity, e.g. 2 or 500m", safeQuote(o.CPU))
	}
	if q, err := resource.ParseQuantity(o.Memory); o.Memory != "" && (err != nil || q.Sign() <= 0) {
		return fmt.Errorf("--memory %q: want a positive memory quantity, e.g. 2Gi or 512Mi", safeQuote(o.Memory))
	}
	if o.StartGrace < 0 {
		return fmt.Errorf("--start-grace %s: must be > 0", o.StartGrace)
	}
	return nil
}

// Manifest is the objects of a sharded run, in the order kubectl should create them.
type Manifest struct {
	Trace   *corev1.ConfigMap
	Results *corev1.PersistentVolumeClaim
	Clock   *appsv1.Deployment
	ClockSv *corev1.Service
	Shards  *batchv1.Job
	Merge   *batchv1.Job
}

// Objects lists the manifest's objects in order. Trace is nil when the pods fetch the trace
// from a URL or read it from a volume.
func (m *Manifest) Objects() []any {
	objs := []any{m.Trace, m.Results, m.Clock, m.ClockSv, m.Shards, m.Merge}
	if m.Trace == nil {
		objs = objs[1:]
	}
	return objs
}

// Build makes the manifest.
func Build(o Options) (*Manifest, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	clock, clockSvc := o.clockObjects()
	clockURL := fmt.Sprintf("http://%s-clock:%d", o.Name, clockPort)
	var cm *corev1.ConfigMap
	if o.TraceURL == "" && o.TraceVolume == "" {
		cm = o.traceConfigMap()
	}
	return &Manifest{Trace: cm, Results: o.resultsClaim(), Clock: clock, ClockSv: clockSvc,
		Shards: o.shardsJob(clockURL), Merge: o.mergeJob()}, nil
}

func podSecurity() *corev1.PodSecurityContext {
	uid := int64(nonroot)
	yes := true
	return &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid, RunAsNonRoot: &yes}
}

// resources requests and limits cpu and, when given, memory (both checked by check).
func resources(cpu, memory string) corev1.ResourceRequirements {
	q := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	if memory != "" {
		q[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return corev1.ResourceRequirements{Requests: q, Limits: q.DeepCopy()}
}

// shardResources are every shard container's requests and limits: --cpu and --memory.
func (o *Options) shardResources() corev1.ResourceRequirements { return resources(o.CPU, o.Memory) }

// mergeResources are the merge pod's: at most one CPU (it reads files), never more than a
// shard's.
func (o *Options) mergeResources() corev1.ResourceRequirements {
	cpu := resource.MustParse(o.CPU)
	if one := resource.MustParse("1"); cpu.Cmp(one) > 0 {
		cpu = one
	}
	return resources(cpu.String(), o.Memory)
}

func mounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{{Name: "trace", MountPath: traceDir, ReadOnly: true}, {Name: "results", MountPath: resultsDir}}
}

// volumes are the pods' trace and results volumes. The trace volume is the ConfigMap, an
// emptyDir the fetch init container fills (TraceURL), or the user's claim (TraceVolume).
func (o *Options) volumes() []corev1.Volume {
	trace := corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: o.Name + "-trace"}}}
	switch {
	case o.TraceURL != "":
		trace = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	case o.TraceVolume != "":
		claim, _, _ := strings.Cut(o.TraceVolume, ":")
		trace = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: true}}
	}
	return []corev1.Volume{
		{Name: "trace", VolumeSource: trace},
		{Name: "results", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: o.Name + "-results"}}},
	}
}

// tracePath is where the pods read the trace.
func (o *Options) tracePath() string {
	if _, p, ok := strings.Cut(o.TraceVolume, ":"); ok && p != "" {
		return path.Join(traceDir, p)
	}
	return path.Join(traceDir, o.TraceName)
}

// traceChecks are the flags that make run and merge check the trace's digest.
func (o *Options) traceChecks() []string {
	if o.TraceSHA256 == "" {
		return nil
	}
	return []string{"--trace-sha256", o.TraceSHA256}
}

// FetchContainer is the name of the init container that fetches the trace from TraceURL.
const FetchContainer = "fetch-trace"

// initContainers fetch the trace into the pod's emptyDir when it comes from TraceURL: `llmbench
// trace fetch` writes it only once its sha256 matches, so a pod never starts on another file.
// It requests what the pod's main container requests (res), so the pod's request is that.
func (o *Options) initContainers(res corev1.ResourceRequirements) []corev1.Container {
	if o.TraceURL == "" {
		return nil
	}
	return []corev1.Container{{
		Name: FetchContainer, Image: o.Image, Command: []string{binary},
		Args:         []string{"trace", "fetch", "--sha256", o.TraceSHA256, "-o", o.tracePath(), o.TraceURL},
		VolumeMounts: []corev1.VolumeMount{{Name: "trace", MountPath: traceDir}},
		Resources:    res,
	}}
}

// isText reports whether b can go in a ConfigMap's data (UTF-8 text) rather than binaryData.
func isText(b []byte) bool { return bytes.IndexByte(b, 0) < 0 && utf8.Valid(b) }

// Write prints the manifest as YAML documents separated by "---".
func Write(w io.Writer, m *Manifest) error {
	for i, obj := range m.Objects() {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}
