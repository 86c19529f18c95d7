package gbt

import "math"

// builder grows one tree at a time over binned columns.
type builder struct {
	p    Params
	bins *binning
	cols [][]uint8
	d    *Data
	g, h []float64
}

// hist is one node's gradient and hessian sums per feature and bin.
type hist struct{ g, h [][]float64 }

func (b *builder) newHist() *hist {
	width := b.p.MaxBins + 2
	hs := &hist{g: make([][]float64, len(b.cols)), h: make([][]float64, len(b.cols))}
	for f := range b.cols {
		hs.g[f], hs.h[f] = make([]float64, width), make([]float64, width)
	}
	return hs
}

func (b *builder) fill(hs *hist, rows []int32) {
	for f, col := range b.cols {
		hg, hh := hs.g[f], hs.h[f]
		for _, i := range rows {
			bin := col[i]
			hg[bin] += b.g[i]
			hh[bin] += b.h[i]
		}
	}
}

// minus sets hs = parent − sibling (the histogram subtraction trick: only
// the smaller child is summed).
func (hs *hist) minus(parent, sibling *hist) {
	for f := range hs.g {
		for j := range hs.g[f] {
			hs.g[f][j] = parent.g[f][j] - sibling.g[f][j]
			hs.h[f][j] = parent.h[f][j] - sibling.h[f][j]
		}
	}
}

type pending struct {
	node  int
	rows  []int32
	hist  *hist
	depth int
}

// grow fits one tree to the gradients at the current margins.
func (b *builder) grow(margin []float64) Tree {
	n := len(margin)
	if b.g == nil {
		b.g, b.h = make([]float64, n), make([]float64, n)
	}
	rows := make([]int32, n)
	for i, m := range margin {
		p := 1 / (1 + math.Exp(-m))
		w := float64(b.d.W[i])
		b.g[i] = w * (p - float64(b.d.Y[i]))
		b.h[i] = max(w*p*(1-p), 1e-16)
		rows[i] = int32(i)
	}
	t := Tree{Nodes: []Node{{}}}
	root := b.newHist()
	b.fill(root, rows)
	queue := []pending{{node: 0, rows: rows, hist: root}}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		G, H := sums(c.hist)
		s, ok := split{}, false
		if c.depth < b.p.MaxDepth {
			s, ok = b.bestSplit(c.hist, G, H)
		}
		if !ok {
			t.Nodes[c.node] = Node{Leaf: true, Value: float32(-G / (H + b.p.Lambda) * b.p.LearningRate)}
			continue
		}
		left, right := partition(c.rows, b.cols[s.feature], s.bin)
		l, r := len(t.Nodes), len(t.Nodes)+1
		t.Nodes = append(t.Nodes, Node{}, Node{})
		t.Nodes[c.node] = Node{Feature: s.feature, Threshold: b.bins.cuts[s.feature][s.bin], Left: l, Right: r}
		// Fill the smaller child's histogram; the larger one is the
		// parent's minus it.
		small := left
		if len(left) > len(right) {
			small = right
		}
		hs, hb := b.newHist(), b.newHist()
		b.fill(hs, small)
		hb.minus(c.hist, hs)
		lh, rh := hs, hb
		if len(left) > len(right) {
			lh, rh = hb, hs
		}
		queue = append(queue, pending{l, left, lh, c.depth + 1}, pending{r, right, rh, c.depth + 1})
	}
	return t
}

func sums(hs *hist) (G, H float64) {
	for j := range hs.g[0] {
		G += hs.g[0][j]
		H += hs.h[0][j]
	}
	return G, H
}

type split struct {
	feature int
	bin     int // left: bins 0..bin
	gain    float64
}

// bestSplit scans every feature's ordered bins; NaN values stay right.
func (b *builder) bestSplit(hs *hist, G, H float64) (split, bool) {
	lambda, minH := b.p.Lambda, b.p.MinChildWeight
	parent := G * G / (H + lambda)
	best := split{gain: 1e-12}
	found := false
	for f, cuts := range b.bins.cuts {
		var gl, hl float64
		for j := range cuts { // bins 0..len(cuts)-1 can be a left side
			gl += hs.g[f][j]
			hl += hs.h[f][j]
			gr, hr := G-gl, H-hl
			if hl < minH || hr < minH {
				continue
			}
			if gain := gl*gl/(hl+lambda) + gr*gr/(hr+lambda) - parent; gain > best.gain {
				best, found = split{feature: f, bin: j, gain: gain}, true
			}
		}
	}
	return best, found
}

// partition splits rows into bins ≤ bin and the rest, in order.
func partition(rows []int32, col []uint8, bin int) (left, right []int32) {
	for _, i := range rows {
		if int(col[i]) <= bin {
			left = append(left, i)
		} else {
			right = append(right, i)
		}
	}
	return left, right
}
