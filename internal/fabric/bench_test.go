//go:build unix

package fabric

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRead reads a whole node: a p5.48xlarge's 32 EFA devices (the
// p4d capture's rdmap16s27 32 times) and an H100 node's 8 ConnectX-7 in
// InfiniBand mode (the connectx-ib capture), once with the one-shot Read
// and with a Reader (its reads after the first). The agent's budget is
// 1 ms a read. Both trees are in b.TempDir; on a real node each hw_counters read
// may also ask the device (cached for lifespan ms). cpu-ns/op is the
// process's user+system CPU time per read, which a loaded machine
// disturbs less than ns/op: the read is a thousand system calls.
func BenchmarkRead(b *testing.B) {
	efa := b.TempDir()
	src := filepath.Join(fixture(b, "efa-p4d"), "devices", "pci0000:00", "0000:10:1b.0", "infiniband", "rdmap16s27")
	for i := range 32 {
		bus := 0x10 + 4*i
		addDevice(b, efa, src, fmt.Sprintf("rdmap%ds27", bus), fmt.Sprintf("0000:%02x:1b.0", bus), "efa")
	}
	cx := fixture(b, "connectx-ib")

	for _, bc := range []struct {
		name, root string
		devices    int
	}{{"efa-32", efa, 32}, {"connectx-8", cx, 8}} {
		check := func(b *testing.B, s *Snapshot, err error) {
			if err != nil || len(s.Devices) != bc.devices || s.Devices[0].Errors != nil {
				b.Fatalf("Read: %v, %d devices", err, len(s.Devices))
			}
		}
		b.Run(bc.name+"/once", func(b *testing.B) {
			b.ReportAllocs()
			before := cpuTime(b)
			for b.Loop() {
				s, err := Read(context.Background(), ReadOptions{Root: bc.root})
				check(b, s, err)
			}
			b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
		})
		// A Reader's reads after the first: the agent's steady state.
		b.Run(bc.name+"/reader", func(b *testing.B) {
			rd := NewReader(ReadOptions{Root: bc.root})
			defer func() { _ = rd.Close() }()
			s, err := rd.Read(context.Background())
			check(b, s, err)
			b.ReportAllocs()
			before := cpuTime(b)
			for b.Loop() {
				s, err := rd.Read(context.Background())
				check(b, s, err)
			}
			b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
