package gbt

import (
	"fmt"
	"math"
	"slices"
)

// Data is a set of weighted, labelled rows.
type Data struct {
	Features int
	X        []float32 // row-major, len = rows × Features
	Y        []float32 // 0 or 1
	W        []float32 // weight of each row (> 0)
}

// Rows is the number of rows.
func (d *Data) Rows() int { return len(d.Y) }

// Add appends a row.
func (d *Data) Add(x []float32, y, w float32) {
	d.X = append(d.X, x...)
	d.Y = append(d.Y, y)
	d.W = append(d.W, w)
}

// Append adds all rows of o.
func (d *Data) Append(o *Data) {
	d.X, d.Y, d.W = append(d.X, o.X...), append(d.Y, o.Y...), append(d.W, o.W...)
}

func (d *Data) check() error {
	if d.Features <= 0 || len(d.X) != d.Rows()*d.Features || len(d.W) != d.Rows() {
		return fmt.Errorf("data: %d features, %d values, %d labels, %d weights do not fit", d.Features, len(d.X), len(d.Y), len(d.W))
	}
	for i, w := range d.W {
		if !(w > 0) || math.IsInf(float64(w), 0) || (d.Y[i] != 0 && d.Y[i] != 1) {
			return fmt.Errorf("data: row %d: label %v, weight %v: want label 0 or 1 and a positive weight", i, d.Y[i], w)
		}
	}
	return nil
}

// binning maps each feature's values to at most maxBins ordered bins.
// cuts[f][j] is the upper edge of bin j: x ≤ cuts[f][j] and x > cuts[f][j−1].
type binning struct {
	cuts [][]float32
}

// newBinning picks cut points from the data: every distinct value when
// there are few, else values at evenly spaced ranks.
func newBinning(d *Data, maxBins int) *binning {
	b := &binning{cuts: make([][]float32, d.Features)}
	vals := make([]float32, 0, d.Rows())
	for f := range d.Features {
		vals = vals[:0]
		for i := range d.Rows() {
			if v := d.X[i*d.Features+f]; v == v {
				vals = append(vals, v)
			}
		}
		slices.Sort(vals)
		uniq := slices.Compact(slices.Clone(vals))
		var cuts []float32
		if len(uniq) <= maxBins {
			cuts = uniq
		} else {
			for j := 1; j < maxBins; j++ {
				cuts = append(cuts, vals[j*len(vals)/maxBins])
			}
			cuts = slices.Compact(cuts)
		}
		// The largest value needs no cut: "greater than every cut" is the
		// last bin.
		if len(cuts) > 0 && cuts[len(cuts)-1] == uniq[len(uniq)-1] {
			cuts = cuts[:len(cuts)-1]
		}
		b.cuts[f] = cuts
	}
	return b
}

// bin returns the bin of value v of feature f: 0..len(cuts) in order,
// and len(cuts)+1 for NaN (an unreported reading), which always goes right.
func (b *binning) bin(f int, v float32) uint8 {
	c := b.cuts[f]
	if v != v {
		return uint8(len(c) + 1)
	}
	j, _ := slices.BinarySearch(c, v) // first cut ≥ v
	return uint8(j)
}

// columns bins the data column by column.
func (b *binning) columns(d *Data) [][]uint8 {
	cols := make([][]uint8, d.Features)
	for f := range cols {
		col := make([]uint8, d.Rows())
		for i := range col {
			col[i] = b.bin(f, d.X[i*d.Features+f])
		}
		cols[f] = col
	}
	return cols
}
