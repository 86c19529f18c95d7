package fleetsim

import (
	"math"
	"math/rand/v2"
)

// rng wraps the per-GPU random stream with the draws the generator uses.
type rng struct{ *rand.Rand }

func newRNG(seed uint64, gpu int) rng {
	// Two different mixes of (seed, gpu) make the PCG's two words, so
	// neighbouring seeds and GPUs give unrelated streams.
	return rng{rand.New(rand.NewPCG(splitmix(seed^0x5851f42d4c957f2d+uint64(gpu)), splitmix(uint64(gpu)*0x9e3779b97f4a7c15^seed)))}
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// uniform draws from [lo, hi).
func (r rng) uniform(lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }

// logUniform draws from [lo, hi) with a uniform logarithm: every decade
// of rate equally likely.
func (r rng) logUniform(lo, hi float64) float64 {
	return math.Exp(r.uniform(math.Log(lo), math.Log(hi)))
}

// logNormal draws with the given median and log-space sigma.
func (r rng) logNormal(median, sigma float64) float64 {
	return median * math.Exp(sigma*r.NormFloat64())
}

// chance is true with probability p.
func (r rng) chance(p float64) bool { return r.Float64() < p }

// poisson draws a count with mean lambda (normal approximation above 30).
func (r rng) poisson(lambda float64) uint64 {
	switch {
	case lambda <= 0:
		return 0
	case lambda > 30:
		return uint64(max(0, math.Round(lambda+math.Sqrt(lambda)*r.NormFloat64())))
	}
	l, k, p := math.Exp(-lambda), uint64(0), r.Float64()
	for p > l {
		k++
		p *= r.Float64()
	}
	return k
}

// exponential draws a waiting time with the given rate (events per unit).
func (r rng) exponential(rate float64) float64 { return r.ExpFloat64() / rate }
