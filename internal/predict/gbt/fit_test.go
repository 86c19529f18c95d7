package gbt

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// synthetic makes rows whose label is an interaction of two features
// (x0 > 0.5 and x1 < 0.3), with a third feature of pure noise, NaNs in
// x2, and 5 % label noise.
func synthetic(seed uint64, n int) *Data {
	r := rand.New(rand.NewPCG(seed, 1))
	d := &Data{Features: 3}
	for range n {
		x := []float32{r.Float32(), r.Float32(), r.Float32()}
		if r.IntN(10) == 0 {
			x[2] = float32(math.NaN())
		}
		y := float32(0)
		if x[0] > 0.5 && x[1] < 0.3 {
			y = 1
		}
		if r.IntN(20) == 0 {
			y = 1 - y
		}
		d.Add(x, y, 1)
	}
	return d
}

func accuracy(e *Ensemble, d *Data) float64 {
	ok := 0
	for i := range d.Rows() {
		p := e.Margin(d.X[i*d.Features:(i+1)*d.Features]) > 0
		if p == (d.Y[i] == 1) {
			ok++
		}
	}
	return float64(ok) / float64(d.Rows())
}

func TestFitLearnsAnInteraction(t *testing.T) {
	train, valid, test := synthetic(1, 4000), synthetic(2, 1000), synthetic(3, 2000)
	p := DefaultParams()
	e, rep, err := Fit(train, valid, p)
	if err != nil {
		t.Fatal(err)
	}
	// 5 % of labels are flipped, so 0.95 is the best possible.
	if acc := accuracy(e, test); acc < 0.92 {
		t.Errorf("held-out accuracy %.3f, want ≥ 0.92 (trees %d, losses %.3f/%.3f)", acc, rep.Trees, rep.TrainLoss, rep.ValidationLoss)
	}
	if rep.Trees >= p.Trees {
		t.Errorf("early stopping kept all %d trees", rep.Trees)
	}
	e2, _, _ := Fit(train, valid, p)
	if !reflect.DeepEqual(e, e2) {
		t.Error("two fits of the same data differ")
	}
	for _, tr := range e.Trees {
		for i, n := range tr.Nodes {
			if !n.Leaf && (n.Left <= i || n.Right <= i || n.Right >= len(tr.Nodes)) {
				t.Fatalf("node %d has children %d, %d: want them after it", i, n.Left, n.Right)
			}
		}
	}
}

func TestWeightsShiftTheModel(t *testing.T) {
	// Doubling the weight of every positive row raises every margin by
	// about log 2: the prior shift train relies on.
	a, b := synthetic(1, 3000), synthetic(1, 3000)
	for i, y := range b.Y {
		if y == 1 {
			b.W[i] = 2
		}
	}
	p := DefaultParams()
	p.EarlyStop = 0
	p.Trees = 50
	ea, _, _ := Fit(a, nil, p)
	eb, _, _ := Fit(b, nil, p)
	if d := eb.Base - ea.Base; math.Abs(d-math.Log(2)) > 1e-9 {
		t.Errorf("base moved by %v, want log 2", d)
	}
}

func TestFitRejectsBadData(t *testing.T) {
	d := synthetic(1, 10)
	for _, tc := range []struct {
		name string
		edit func(*Data)
		want string
	}{
		{"label", func(d *Data) { d.Y[3] = 0.5 }, "row 3"},
		{"weight", func(d *Data) { d.W[4] = 0 }, "row 4"},
		{"shape", func(d *Data) { d.X = d.X[1:] }, "do not fit"},
		{"one class", func(d *Data) {
			for i := range d.Y {
				d.Y[i] = 0
			}
		}, "one class"},
	} {
		c := &Data{Features: d.Features, X: append([]float32(nil), d.X...), Y: append([]float32(nil), d.Y...), W: append([]float32(nil), d.W...)}
		tc.edit(c)
		if _, _, err := Fit(c, nil, DefaultParams()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
}

func TestBinning(t *testing.T) {
	d := &Data{Features: 1}
	for _, v := range []float32{3, 1, 2, 2, float32(math.NaN()), 1} {
		d.Add([]float32{v}, 0, 1)
	}
	b := newBinning(d, 64)
	if got := b.cuts[0]; !reflect.DeepEqual(got, []float32{1, 2}) {
		t.Errorf("cuts %v, want [1 2] (the largest value needs none)", got)
	}
	for v, want := range map[float32]uint8{0: 0, 1: 0, 1.5: 1, 2: 1, 3: 2, 99: 2} {
		if got := b.bin(0, v); got != want {
			t.Errorf("bin(%v) = %d, want %d", v, got, want)
		}
	}
	if got := b.bin(0, float32(math.NaN())); got != 3 {
		t.Errorf("bin(NaN) = %d, want 3, past the ordered bins", got)
	}
}
