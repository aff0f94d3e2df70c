package metrics

import (
	"strings"
	"testing"
	"time"
)

func TestParseSLO(t *testing.T) {
	good := []struct {
		in   string
		want SLO
	}{
		{"", SLO{}},
		{"ttft=500ms", SLO{TTFT: 500 * time.Millisecond}},
		{"ttft=500ms,tpot=50ms,max_gap=1s,e2e=20s,itl_p99=100ms", SLO{TTFT: 500 * time.Millisecond, TPOT: 50 * time.Millisecond, MaxGap: time.Second, E2E: 20 * time.Second, ITLP99: 100 * time.Millisecond}},
		{" TTFT = 250 , tpot=12.5 ", SLO{TTFT: 250 * time.Millisecond, TPOT: 12500 * time.Microsecond}},
		{"itl=80ms,maxgap=2s", SLO{ITLP99: 80 * time.Millisecond, MaxGap: 2 * time.Second}},
		{"e2e=1m", SLO{E2E: time.Minute}},
	}
	for _, g := range good {
		got, err := ParseSLO(g.in)
		if err != nil || got != g.want {
			t.Errorf("ParseSLO(%q) = %+v, %v; want %+v", g.in, got, err, g.want)
		}
		if again, err := ParseSLO(got.String()); err != nil || again != got {
			t.Errorf("round trip of %q via %q: %+v %v", g.in, got.String(), again, err)
		}
	}
	bad := []struct{ in, msg string }{
		{"ttft", "write KEY=VALUE"},
		{"ttft=", "write KEY=VALUE"},
		{"latency=5ms", `unknown key "latency"`},
		{"ttft=fast", "bad duration"},
		{"ttft=-5ms", "must be positive"},
		{"ttft=0", "must be positive"},
		{"ttft=1ms,,tpot=2ms", "empty"},
		{"ttft=1ms,ttft=2ms", "given twice"},
		{"itl=1ms,itl_p99=2ms", "given twice"},
		{"ttft=NaN", "out of range"},
		{"ttft=1e300", "out of range"},
	}
	for _, b := range bad {
		_, err := ParseSLO(b.in)
		if err == nil || !strings.Contains(err.Error(), b.msg) {
			t.Errorf("ParseSLO(%q) error %v, want it to mention %q", b.in, err, b.msg)
		}
	}
}

func TestParseFailOn(t *testing.T) {
	got, err := ParseFailOn("ttft.p95>+5%, goodput<-2% ,itl_chunk.p99>=+10ms,e2e.p50>0.5s,failures>0.01,throughput<-3%,goodput<-2pp,e2e.p99>250")
	if err != nil {
		t.Fatal(err)
	}
	want := []Threshold{
		{Metric: "ttft.p95", Op: ">", Value: 5, Relative: true, Text: "ttft.p95>+5%", Unit: "%"},
		{Metric: "goodput.fraction", Op: "<", Value: -2, Relative: true, Text: "goodput<-2%", Unit: "%"},
		{Metric: "itl_chunk.p99", Op: ">", Value: 10, Text: "itl_chunk.p99>=+10ms", Unit: "ms"},
		{Metric: "e2e.p50", Op: ">", Value: 500, Text: "e2e.p50>0.5s", Unit: "ms"},
		{Metric: "failures.fraction", Op: ">", Value: 0.01, Text: "failures>0.01", Unit: "fraction"},
		{Metric: "throughput.output_tokens_per_s", Op: "<", Value: -3, Relative: true, Text: "throughput<-3%", Unit: "%"},
		{Metric: "goodput.fraction", Op: "<", Value: -0.02, Text: "goodput<-2pp", Unit: "fraction"},
		{Metric: "e2e.p99", Op: ">", Value: 250, Text: "e2e.p99>250", Unit: "ms"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rules", len(got))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rule %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if got[0].String() != "ttft.p95>+5%" || got[3].String() != "e2e.p50>+500" {
		t.Errorf("String: %s %s", got[0], got[3])
	}
	describe := map[int]string{
		0: "fails when ttft.p95 rises by more than 5% of the base, with confidence",
		4: "fails when failures.fraction rises by more than 1 percentage points (a fraction, 0.01), with confidence",
		6: "fails when goodput.fraction falls by more than 2 percentage points (a fraction, 0.02), with confidence",
		7: "fails when e2e.p99 rises by more than 250 ms, with confidence",
	}
	for i, want := range describe {
		if d := got[i].Describe(); d != want {
			t.Errorf("Describe(%s) = %q, want %q", got[i].Text, d, want)
		}
	}
	if d := (Threshold{Metric: "ttft.p95", Op: ">", Value: -5, Relative: true}).Describe(); !strings.Contains(d, "does not fall by at least 5%") {
		t.Errorf("Describe of an improvement gate: %q", d)
	}
	if d, err := ParseFailOn(DefaultFailOn); err != nil || len(d) != 6 {
		t.Errorf("DefaultFailOn: %v %v", d, err)
	}
	if r, err := ParseFailOn("  "); err != nil || r != nil {
		t.Errorf("empty: %v %v", r, err)
	}
	bad := []struct{ in, msg string }{
		{"ttft.p95", "missing operator"},
		{">5%", "missing metric"},
		{"ttft.p95>", "missing value"},
		{"ttft>5%", "name a statistic"},
		{"ttft.p42>5%", "unknown statistic"},
		{"latency.p95>5%", "unknown metric"},
		{"ttft.p95>five%", "bad percent"},
		{"ttft.p95>5furlongs", "bad value"},
		{"goodput<-2ms", "is a duration"},
		{"ttft.p95>5%,", "empty"},
		{"ttft.p95>Inf", "finite"},
		// A direction that cannot regress names the rule to write.
		{"ttft.p95<+5%", "write ttft.p95>+5%"},
		{"ttft.p95<=-5%", "better when lower"},
		{"goodput>-2%", "write goodput<-2%"},
		{"throughput.requests_per_s>5", "better when higher"},
		{"failures<-0.01", "write failures>+0.01"},
		{"goodput>+2pp", "write goodput<-2pp"},
		// Descriptive metrics are never gated.
		{"itl.p99>+10%", "itl.p99 is descriptive"},
		{"itl.p50>+10ms", "descriptive"},
		{"tokens_per_chunk.mean<-5%", "tokens_per_chunk.mean is descriptive"},
		// Percentage points are for fractions, and bounded.
		{"ttft.p95>+5pp", "percentage points, which apply to fractions, but ttft.p95 is measured in ms"},
		{"goodput<-2.5.1pp", "bad percentage points"},
		{"goodput<-200pp", "at most 100 percentage points"},
		// A bare number says which unit it was read in.
		{"goodput<-2", "read as a fraction"},
		{"stalls>3", "write 3% for a relative change or 3pp"},
		{"throughput<-5x", "a bare number in tok/s"},
		{"lag.p99>+5%", "not compared"},
	}
	for _, b := range bad {
		_, err := ParseFailOn(b.in)
		if err == nil || !strings.Contains(err.Error(), b.msg) {
			t.Errorf("ParseFailOn(%q) error %v, want it to mention %q", b.in, err, b.msg)
		}
	}
}

func TestLookupMetricNames(t *testing.T) {
	for _, n := range DefaultCompareMetrics {
		if _, err := LookupMetric(n); err != nil {
			t.Errorf("default metric %s: %v", n, err)
		}
	}
	m, err := LookupMetric("Fluidity")
	if err != nil || m.Name != "fluidity.mean" || m.Better != "higher" {
		t.Errorf("%+v %v", m, err)
	}
}

func FuzzParseSLO(f *testing.F) {
	for _, s := range []string{"ttft=500ms,tpot=50ms,max_gap=1s,e2e=20s,itl_p99=100ms", "ttft=500", "", "x=y", "ttft=1e400", "tpot=-0", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		slo, err := ParseSLO(s)
		if err != nil {
			return
		}
		for _, d := range []time.Duration{slo.TTFT, slo.TPOT, slo.ITLP99, slo.MaxGap, slo.E2E} {
			if d < 0 {
				t.Fatalf("negative limit from %q: %+v", s, slo)
			}
		}
		again, err := ParseSLO(slo.String())
		if err != nil || again != slo {
			t.Fatalf("round trip %q -> %q: %+v %v", s, slo.String(), again, err)
		}
	})
}

func FuzzParseFailOn(f *testing.F) {
	for _, s := range []string{"ttft.p95>+5%,goodput<-2%", "itl.p99>=10ms", "e2e.max<-1.5s", "failures<0.1", "x>", "<", "ttft.p95>+%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rules, err := ParseFailOn(s)
		if err != nil {
			return
		}
		for _, r := range rules {
			if r.Op != ">" && r.Op != "<" {
				t.Fatalf("op %q from %q", r.Op, s)
			}
			if !isFinite(r.Value) {
				t.Fatalf("value %v from %q", r.Value, s)
			}
			if _, err := LookupMetric(r.Metric); err != nil {
				t.Fatalf("metric %q from %q: %v", r.Metric, s, err)
			}
			back, err := ParseFailOn(r.String())
			if err != nil || len(back) != 1 || back[0].Metric != r.Metric || back[0].Op != r.Op || back[0].Relative != r.Relative {
				t.Fatalf("round trip %q -> %q: %+v %v", s, r.String(), back, err)
			}
		}
	})
}
