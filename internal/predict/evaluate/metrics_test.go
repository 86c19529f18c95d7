package evaluate

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// handSeries: four GPU slots, definitions 30 min / 10 min, re-raise 20 min.
//
//	slot 0 fails at 10000: alarms at 8000 (2000 s before: false) and 9300
//	  (700 s: true, predicted); 8500 and 9800 fall in the re-raise period.
//	slot 1 fails at 20000: one alarm 300 s before — true, but too late to
//	  count as predicted.
//	slot 2 never fails: a false alarm at 5000 (score 0.99) and a score
//	  below every threshold.
//	slot 3 fails at 30000 with no alarm.
func handSeries() []Series {
	return []Series{
		{Points: []Point{{8000, 0.9}, {8500, 0.9}, {9300, 0.9}, {9800, 0.9}}, Failures: []int64{10000}},
		{Points: []Point{{19700, 0.95}}, Failures: []int64{20000}},
		{Points: []Point{{5000, 0.99}, {5100, 0.2}}},
		{Failures: []int64{30000}},
	}
}

func TestMetricsByHand(t *testing.T) {
	d := DefaultDefinitions()
	if d.Reraise() != 20*time.Minute {
		t.Fatalf("re-raise %s, want 20m", d.Reraise())
	}
	ignoreCI := cmpopts.IgnoreFields(Metrics{}, "PrecisionCI95", "RecallCI95")
	for _, tc := range []struct {
		thr  float64
		want Metrics
	}{
		{0.5, Metrics{Threshold: 0.5, Precision: 0.5, Recall: 1.0 / 3, MedianLeadSeconds: 500, Alarms: 4, TrueAlarms: 2, Failures: 3, Detected: 1, AlarmedFailures: 2}},
		{0.95, Metrics{Threshold: 0.95, Precision: 0.5, Recall: 0, MedianLeadSeconds: 300, Alarms: 2, TrueAlarms: 1, Failures: 3, Detected: 0, AlarmedFailures: 1}},
		{0.99, Metrics{Threshold: 0.99, Precision: 0, Recall: 0, Alarms: 1, Failures: 3}},
		{1.5, Metrics{Threshold: 1.5, Failures: 3}},
	} {
		got := At(handSeries(), tc.thr, d, nil)
		if diff := cmp.Diff(tc.want, got, ignoreCI); diff != "" {
			t.Errorf("threshold %v (-want +got):\n%s", tc.thr, diff)
		}
	}
	pts, ap := Curve(handSeries(), []float64{0.99, 0.95, 0.5}, d)
	if len(pts) != 3 || math.Abs(ap-1.0/6) > 1e-12 {
		t.Errorf("curve %+v, AP %v: want 3 points and AP 1/3 × 0.5 = 1/6", pts, ap)
	}
}

func TestOutcomesPerFailure(t *testing.T) {
	type out struct {
		series, failure int
		detected        bool
		lead            time.Duration
	}
	var got []out
	At(handSeries(), 0.5, DefaultDefinitions(), func(s, f int, det bool, lead time.Duration) {
		got = append(got, out{s, f, det, lead})
	})
	want := []out{{0, 0, true, 700 * time.Second}, {1, 0, false, 300 * time.Second}, {3, 0, false, 0}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(out{})); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

func TestWilsonInterval(t *testing.T) {
	p, ci := ratio(8, 10)
	// Wilson 95 % for 8/10: [0.490, 0.943].
	if p != 0.8 || math.Abs(ci[0]-0.490) > 0.001 || math.Abs(ci[1]-0.943) > 0.001 {
		t.Errorf("8/10 = %v %v, want 0.8 [0.490, 0.943]", p, ci)
	}
	if p, ci := ratio(0, 0); p != 0 || ci != [2]float64{} {
		t.Errorf("0/0 = %v %v, want 0 [0 0]", p, ci)
	}
}

func TestDefinitionsCheck(t *testing.T) {
	for _, d := range []Definitions{{Horizon: 0}, {Horizon: time.Hour, MinLead: time.Hour}, {Horizon: time.Hour, MinLead: -1}} {
		if d.Check() == nil {
			t.Errorf("%+v accepted", d)
		}
	}
}
