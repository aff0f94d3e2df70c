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
	// bytes; a ConfigMap holds at most 1 MiB.
	TraceName string
	Trace     []byte
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
	// scheduler from the CPUs it may use.
	CPU string
}

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

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// A Secret's name is a DNS subdomain; a key in it is letters, digits, '-', '_' and '.'.
var (
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)
	secretKey    = regexp.MustCompile(`^[-._a-zA-Z0-9]{1,253}$`)
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
	case len(o.Name) > 40 || !dnsLabel.MatchString(o.Name):
		return fmt.Errorf("--name %q: want a DNS label (lower-case letters, digits, '-') of at most 40 characters", o.Name)
	case o.Image == "":
		return errors.New("--image is required: an image built from llmbench's Dockerfile")
	case o.Shards < 1:
		return fmt.Errorf("--shards %d: must be >= 1", o.Shards)
	case o.Endpoint == "":
		return errors.New("--endpoint is required: every shard sends to the same server")
	case o.StartAt.IsZero():
		return errors.New("a start time is required (--start-at or --start-in)")
	case len(o.Trace) == 0:
		return errors.New("the trace is empty")
	case len(o.Trace) > maxTrace:
		return fmt.Errorf("the trace is %d bytes, more than a ConfigMap holds (1 MiB): write it as msgpack (`llmbench trace convert`), or put it on a volume and edit the manifest's trace volume", len(o.Trace))
	case o.TraceName == "" || path.Base(o.TraceName) != o.TraceName:
		return fmt.Errorf("trace name %q: want a file name", o.TraceName)
	}
	if err := checkNoSecrets(o.Endpoint, o.RunArgs); err != nil {
		return err
	}
	if o.APIKeySecret != "" {
		name, key, _ := strings.Cut(o.APIKeySecret, ":")
		if !dnsSubdomain.MatchString(name) || (key != "" && !secretKey.MatchString(key)) {
			return fmt.Errorf("--api-key-secret %q: want NAME or NAME:KEY of a Kubernetes Secret", safeQuote(o.APIKeySecret))
		}
	}
	if _, err := resource.ParseQuantity(o.Storage); err != nil {
		return fmt.Errorf("--storage %q: %w", o.Storage, err)
	}
	if _, err := resource.ParseQuantity(o.CPU); err != nil {
		return fmt.Errorf("--cpu %q: %w", o.CPU, err)
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

// Objects lists the manifest's objects in order.
func (m *Manifest) Objects() []any {
	return []any{m.Trace, m.Results, m.Clock, m.ClockSv, m.Shards, m.Merge}
}

// Build makes the manifest.
func Build(o Options) (*Manifest, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	clock, clockSvc := o.clockObjects()
	clockURL := fmt.Sprintf("http://%s-clock:%d", o.Name, clockPort)
	return &Manifest{Trace: o.traceConfigMap(), Results: o.resultsClaim(), Clock: clock, ClockSv: clockSvc,
		Shards: o.shardsJob(clockURL), Merge: o.mergeJob()}, nil
}

func podSecurity() *corev1.PodSecurityContext {
	uid := int64(nonroot)
	yes := true
	return &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid, RunAsNonRoot: &yes}
}

func resources(cpu string) corev1.ResourceRequirements {
	q := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	return corev1.ResourceRequirements{Requests: q, Limits: q}
}

func mounts() []corev1.VolumeMount {
	return []corev1.VolumeMount{{Name: "trace", MountPath: traceDir, ReadOnly: true}, {Name: "results", MountPath: resultsDir}}
}

func volumes(name string) []corev1.Volume {
	return []corev1.Volume{
		{Name: "trace", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name + "-trace"}}}},
		{Name: "results", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name + "-results"}}},
	}
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
