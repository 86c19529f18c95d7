package kmsg

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's CPU time. The benchmarks report it per line
// next to wall time because a shared machine stretches wall time with
// other people's work; GC work on other threads is counted too.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportPerLine reports wall and CPU nanoseconds per line.
func reportPerLine(b *testing.B, cpu0 time.Duration, lines int) {
	n := float64(b.N * lines)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/line")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/n, "cpu-ns/line")
	b.ReportMetric(0, "ns/op")
}

// dmesgText is n ordinary dmesg lines, a mix of the kinds a GPU node
// logs, with an indented multi-line record now and then.
func dmesgText(n int) []byte {
	kinds := []string{
		"NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).",
		"IPv6: ADDRCONF(NETDEV_CHANGE): cali817bc444564: link becomes ready",
		"pcieport 0000:17:01.0: AER: Corrected error received: 0000:18:00.0",
		"nvidia 0000:18:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)",
		"perf: interrupt took too long (2509 > 2500), lowering kernel.perf_event_max_sample_rate to 79500",
	}
	var b bytes.Buffer
	for i := range n {
		usec := 600000000 + i*37
		fmt.Fprintf(&b, "[%5d.%06d] %s\n", usec/1e6, usec%1e6, kinds[i%len(kinds)])
		if i%100 == 99 {
			b.WriteString("               NVRM: continuation line of a multi-line record\n")
		}
	}
	return b.Bytes()
}

func BenchmarkReaderDmesgText(b *testing.B) {
	in := dmesgText(10000)
	lines := bytes.Count(in, []byte("\n"))
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		r := NewReader(bytes.NewReader(in), Options{})
		for {
			if _, err := r.Next(); err != nil {
				if !errors.Is(err, io.EOF) {
					b.Fatal(err)
				}
				break
			}
		}
	}
	reportPerLine(b, cpu0, lines)
}

func BenchmarkReaderRaw(b *testing.B) {
	var buf bytes.Buffer
	for i := range 10000 {
		fmt.Fprintf(&buf, "6,%d,%d,-;IPv6: ADDRCONF(NETDEV_CHANGE): cali817bc444564: link becomes ready\n", i, 600000000+i*37)
	}
	in := buf.Bytes()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		r := NewReader(bytes.NewReader(in), Options{})
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
	reportPerLine(b, cpu0, 10000)
}

func BenchmarkParseRecord(b *testing.B) {
	line := []byte("4,3964,206764307,-;NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP!")
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := ParseRecord(line); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func BenchmarkParseTextLine(b *testing.B) {
	lines := [][]byte{
		[]byte("[Sun Feb 23 16:24:18 2025] NVRM: GPU4 RPC history (CPU -> GSP):"),
		[]byte("kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 13"),
		[]byte("Feb 23 16:24:18 gpu-node-7 kernel: [12345.678901] NVRM: Xid (PCI:0000:9b:00): 119"),
	}
	opts := Options{Location: time.UTC, Year: 2025}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, ok := ParseTextLine(lines[i%len(lines)], opts); !ok {
			b.Fatal("not parsed")
		}
	}
}
