package sim

import (
	"context"
	"fmt"
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

// BenchmarkSnapshotFabric is one read of a node with its 8 ConnectX HCAs
// and 32 EFA devices: the fabric costs the fleet per node.
func BenchmarkSnapshotFabric(b *testing.B) {
	for _, opts := range []Options{ib8, efa} {
		b.Run(fmt.Sprint(opts.Fabric.Devices, opts.Fabric.Kind), func(b *testing.B) {
			opts.Seed = 1
			n, clk := newTestNode(b, opts)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				clk.Step(time.Second)
				if _, err := n.Snapshot(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
