package k8sjob

import (
	"bytes"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
)

const testSum = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestTraceByURL: a trace too large for a ConfigMap is fetched by an init container that
// checks its digest, into an emptyDir both Jobs read; no ConfigMap is printed.
func TestTraceByURL(t *testing.T) {
	o := testOptions()
	o.Trace = bytes.Repeat([]byte("x"), 2<<20) // larger than a ConfigMap: not needed by URL
	o.TraceURL, o.TraceSHA256 = "https://traces.example/prod.jsonl", testSum
	m, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if m.Trace != nil {
		t.Fatal("a ConfigMap was built for a trace fetched by URL")
	}
	var b bytes.Buffer
	if err := Write(&b, m); err != nil {
		t.Fatal(err)
	}
	objs := decode(t, b.Bytes())
	if len(objs) != 5 {
		t.Fatalf("%d objects, want 5 (no ConfigMap)", len(objs))
	}
	for _, job := range []*batchv1.Job{objs[3].(*batchv1.Job), objs[4].(*batchv1.Job)} {
		spec := job.Spec.Template.Spec
		if len(spec.InitContainers) != 1 {
			t.Fatalf("%s: init containers %+v", job.Name, spec.InitContainers)
		}
		fetch := strings.Join(spec.InitContainers[0].Args, " ")
		if fetch != "trace fetch --sha256 "+testSum+" -o /trace/t.jsonl https://traces.example/prod.jsonl" {
			t.Fatalf("%s: fetch args %q", job.Name, fetch)
		}
		if spec.Volumes[0].EmptyDir == nil || spec.InitContainers[0].VolumeMounts[0].ReadOnly {
			t.Fatalf("%s: trace volume %+v, init mounts %+v", job.Name, spec.Volumes[0], spec.InitContainers[0].VolumeMounts)
		}
		args := strings.Join(spec.Containers[0].Args, " ")
		if !strings.Contains(args, "--trace /trace/t.jsonl") || !strings.Contains(args, "--trace-sha256 "+testSum) {
			t.Fatalf("%s: args %q do not read and check the fetched trace", job.Name, args)
		}
	}
}

// TestTraceOnAVolume: the pods read the trace from the user's claim, read-only, at its path.
func TestTraceOnAVolume(t *testing.T) {
	o := testOptions()
	o.Trace = nil
	o.TraceVolume, o.TraceSHA256 = "traces:prod/day1.msgpack", testSum
	m, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	spec := m.Shards.Spec.Template.Spec
	v := spec.Volumes[0].PersistentVolumeClaim
	if m.Trace != nil || v == nil || v.ClaimName != "traces" || !v.ReadOnly || len(spec.InitContainers) != 0 {
		t.Fatalf("trace volume %+v, configmap %v", spec.Volumes[0], m.Trace)
	}
	args := strings.Join(spec.Containers[0].Args, " ")
	if !strings.Contains(args, "--trace /trace/prod/day1.msgpack") || !strings.Contains(args, "--trace-sha256 "+testSum) {
		t.Fatalf("args %q", args)
	}
	merge := strings.Join(m.Merge.Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(merge, "--trace /trace/prod/day1.msgpack") || !strings.Contains(merge, "--trace-sha256 "+testSum) {
		t.Fatalf("merge args %q", merge)
	}
}

func TestTraceViaRefusesBadOptions(t *testing.T) {
	for name, c := range map[string]struct {
		change func(*Options)
		want   string
	}{
		"both":      {func(o *Options) { o.TraceURL, o.TraceVolume = "https://x/t", "c" }, "give one way"},
		"scheme":    {func(o *Options) { o.TraceURL = "ftp://x/t" }, "http:// or https://"},
		"userinfo":  {func(o *Options) { o.TraceURL = "https://u:SECRETpw@x/t" }, "credentials"},
		"query":     {func(o *Options) { o.TraceURL = "https://x/t?sig=SECRETsig" }, "credentials"},
		"claim":     {func(o *Options) { o.TraceVolume = "Bad Claim" }, "CLAIM[:PATH]"},
		"escape":    {func(o *Options) { o.TraceVolume = "c:../etc/passwd" }, "clean path"},
		"absolute":  {func(o *Options) { o.TraceVolume = "c:/etc/passwd" }, "clean path"},
		"no digest": {func(o *Options) { o.TraceURL, o.TraceSHA256 = "https://x/t", "" }, "needs its sha256"},
		"digest":    {func(o *Options) { o.TraceURL, o.TraceSHA256 = "https://x/t", "xyz" }, "64 lower-case"},
	} {
		o := testOptions()
		o.TraceSHA256 = testSum
		c.change(&o)
		_, err := Build(o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one naming %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: the error repeats the secret: %v", name, err)
		}
	}
	o := testOptions()
	o.Trace = bytes.Repeat([]byte("x"), 1<<20+1)
	if _, err := Build(o); err == nil || !strings.Contains(err.Error(), "--trace-url") || !strings.Contains(err.Error(), "--trace-volume") {
		t.Fatalf("a large trace's error does not name the ways out: %v", err)
	}
}
