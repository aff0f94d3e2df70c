package hoststat

import "testing"

func TestParseCPUTimes(t *testing.T) {
	for _, c := range []struct {
		name, stat   string
		total, steal uint64
		ok           bool
	}{
		{"kernel 6", "cpu  29456 0 10739 66127 149 0 2102 1476 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n", 29456 + 10739 + 66127 + 149 + 2102 + 1476, 1476, true},
		{"guest time is not counted twice", "cpu  100 0 0 900 0 0 0 50 40 0\n", 1050, 50, true},
		{"no steal column (old kernels)", "cpu  100 0 0 900 0 0 0\n", 1000, 0, true},
		{"not the aggregate line", "cpu0 100 0 0 900 0 0 0 0\n", 0, 0, false},
		{"a field that is not a number", "cpu  100 x 0 900 0 0 0 0\n", 0, 0, false},
		{"too short", "cpu  100\n", 0, 0, false},
		{"empty", "", 0, 0, false},
	} {
		got, ok := parseCPUTimes(c.stat)
		if ok != c.ok || got.Total != c.total || got.Steal != c.steal {
			t.Errorf("%s: parseCPUTimes = %+v, %v; want total %d steal %d, %v", c.name, got, ok, c.total, c.steal, c.ok)
		}
	}
}

func TestStealFraction(t *testing.T) {
	a := CPUTimes{Total: 1000, Steal: 10}
	if got := stealFraction(a, CPUTimes{Total: 3000, Steal: 210}); got != 0.1 {
		t.Errorf("stealFraction = %v, want 0.1", got)
	}
	if got := stealFraction(a, a); got != -1 {
		t.Errorf("no time passed: stealFraction = %v, want -1", got)
	}
	if got := stealFraction(a, CPUTimes{Total: 2000, Steal: 5}); got != -1 {
		t.Errorf("steal went backwards: stealFraction = %v, want -1", got)
	}
}
