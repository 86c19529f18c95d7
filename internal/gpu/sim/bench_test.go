package sim

import (
	"context"
	"testing"
	"time"
)

// BenchmarkSnapshot8GPU measures one read of a busy 8-GPU node: the
// fleet simulations take thousands of these per simulated minute.
func BenchmarkSnapshot8GPU(b *testing.B) {
	n, clk := newTestNode(b, Options{Seed: 1})
	for _, f := range []Fault{
		{Kind: KindSBE, GPU: 1, Params: params{"count": "4"}},
		{Kind: KindNVLinkErrors, GPU: 2, Params: params{"link": "3", "crc": "9"}},
		{Kind: KindFellOffBus, GPU: 6},
	} {
		if err := n.Inject(f); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		clk.Step(time.Second)
		if _, err := n.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
