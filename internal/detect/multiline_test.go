package detect

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/finding"
)

const fellOffMsg = "NVRM: The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has fallen off the bus and is not responding to commands."

type multiCase struct {
	name string
	msgs []string
	want []finding.Finding
}

// TestMultiLine feeds each case's messages in order to one Detector and
// expects the findings of all of them together.
func TestMultiLine(t *testing.T) {
	fellOff := []finding.Finding{fnd("GPU_FELL_OFF_BUS", 0, "0000:b3:00.0", fatal, reboot, fellOffMsg)}
	tests := []multiCase{
		{"fell off, one record (sim, /dev/kmsg)", []string{
			"NVRM: The NVIDIA GPU 0000:b3:00.0\nNVRM: (PCI ID: 10de:26b5) installed in this system has\nNVRM: fallen off the bus and is not responding to commands.",
		}, fellOff},
		{"fell off, one line per message (text dmesg, indented)", []string{
			"NVRM: The NVIDIA GPU 0000:b3:00.0",
			"               NVRM: (PCI ID: 10de:26b5) installed in this system has",
			"               NVRM: fallen off the bus and is not responding to commands.",
		}, fellOff},
		{"fell off, continuations without NVRM (research page form)", []string{
			"NVRM: The NVIDIA GPU 0000:b3:00.0",
			"(PCI ID: 10de:26b5) installed in this system has",
			"fallen off the bus and is not responding to commands.",
		}, fellOff},
		{"fell off, another CPU's line in between", []string{
			"NVRM: The NVIDIA GPU 0000:b3:00.0",
			"IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
			"NVRM: (PCI ID: 10de:26b5) installed in this system has",
			"NVRM: fallen off the bus and is not responding to commands.",
		}, fellOff},
		{"fell off, opening line long gone", []string{
			"NVRM: The NVIDIA GPU 0000:b3:00.0",
			"noise 1", "noise 2", "noise 3", "noise 4", "noise 5",
			"NVRM: fallen off the bus and is not responding to commands.",
		}, []finding.Finding{fnd("GPU_FELL_OFF_BUS", 0, "", fatal, reboot, "NVRM: fallen off the bus and is not responding to commands.")}},
		{"same opening, other message", []string{
			"NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1c82)\nNVRM: installed in this system is not supported by the\nNVRM: NVIDIA 535.129.03 driver release.",
		}, nil},
		{"sim's fell-off fault: Xid 79, then the message", []string{
			"NVRM: Xid (PCI:0000:b3:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
			"NVRM: The NVIDIA GPU 0000:b3:00.0\nNVRM: (PCI ID: 10de:26b5) installed in this system has\nNVRM: fallen off the bus and is not responding to commands.",
		}, []finding.Finding{
			fnd("XID79", 79, "0000:b3:00.0", fatal, reboot, "NVRM: Xid (PCI:0000:b3:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
			fellOff[0],
		}},
		{"API mismatch, one record", []string{
			"NVRM: API mismatch: the client has the version 575.57.08, but\nNVRM: this kernel module has the version 570.133.20.  Please\nNVRM: make sure that this kernel module and all NVIDIA driver\nNVRM: components have the same version.",
		}, []finding.Finding{fnd("DRIVER_MISMATCH", 0, "", fatal, reboot,
			"NVRM: API mismatch: the client has the version 575.57.08, but this kernel module has the version 570.133.20.  Please make sure that this kernel module and all NVIDIA driver components have the same version.")}},
		{"API mismatch, one line per message", []string{
			"NVRM: API mismatch: the client has the version 575.57.08, but",
			"NVRM: this kernel module has the version 570.133.20.  Please",
			"NVRM: make sure that this kernel module and all NVIDIA driver",
			"NVRM: components have the same version.",
		}, []finding.Finding{fnd("DRIVER_MISMATCH", 0, "", fatal, reboot, "NVRM: API mismatch: the client has the version 575.57.08, but")}},
		{"one OOM kill, two lines", []string{
			"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),task=python,pid=4242,uid=0",
			"Memory cgroup out of memory: Killed process 4242 (python) total-vm:100kB",
		}, []finding.Finding{fnd("OOM_KILL", 0, "", warning, none, "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),task=python,pid=4242,uid=0")}},
		{"one OOM kill, old kernel's two lines", []string{
			"Out of memory: Kill process 456 (python) score 50 or sacrifice child",
			"Killed process 456 (python) total-vm:100kB, anon-rss:90kB, file-rss:0kB",
		}, []finding.Finding{fnd("OOM_KILL", 0, "", warning, none, "Out of memory: Kill process 456 (python) score 50 or sacrifice child")}},
		{"two OOM kills", []string{
			"oom-kill:constraint=CONSTRAINT_MEMCG,task=python,pid=4242,uid=0",
			"Memory cgroup out of memory: Killed process 4243 (python) total-vm:100kB",
		}, []finding.Finding{
			fnd("OOM_KILL", 0, "", warning, none, "oom-kill:constraint=CONSTRAINT_MEMCG,task=python,pid=4242,uid=0"),
			fnd("OOM_KILL", 0, "", warning, none, "Memory cgroup out of memory: Killed process 4243 (python) total-vm:100kB"),
		}},
	}
	tests = append(tests, mlx5HealthCases()...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDetector(t)
			var got []finding.Finding
			for _, m := range tt.msgs {
				got = d.Append(got, m, t0)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestOOMSamePIDLaterIsAnotherKill(t *testing.T) {
	d := newDetector(t)
	line := "Out of memory: Killed process 123 (httpd)"
	n := len(d.Detect(line, t0)) + len(d.Detect(line, t0.Add(time.Minute)))
	if n != 2 {
		t.Errorf("two kills of PID 123 a minute apart gave %d findings, want 2", n)
	}
}

func TestAppendReusesCallerSlice(t *testing.T) {
	d := newDetector(t)
	buf := make([]finding.Finding, 0, 4)
	line := "NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
	if a := testing.AllocsPerRun(100, func() { buf = d.Append(buf[:0], line, t0) }); a != 0 {
		t.Errorf("Append of an Xid into a reused slice: %v allocs, want 0", a)
	}
	noise := "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready"
	if a := testing.AllocsPerRun(100, func() { _ = d.Detect(noise, t0) }); a != 0 {
		t.Errorf("Detect of noise: %v allocs, want 0", a)
	}
	if got := d.Detect(strings.Repeat("x", 10), t0); got != nil {
		t.Errorf("noise gave %v, want nil", got)
	}
}

// mlx5HealthCases: one firmware health report is a fatal line and the
// dump of the health buffer after it (newer kernels head the dump with
// "Health issue observed, …"); the report is one finding whether its
// lines arrive one per record or joined, and another CPU's line or
// another adapter's in between changes nothing.
func mlx5HealthCases() []multiCase {
	const (
		dev0     = "0000:73:00.0"
		missed   = "mlx5_core 0000:73:00.0: poll_health:1151:(pid 0): device's health compromised - reached miss count"
		header   = "mlx5_core 0000:73:00.0: print_health_info:453:(pid 0): Health issue observed, firmware internal error, severity(3) ERROR:"
		assert0  = "mlx5_core 0000:73:00.0: print_health_info:457:(pid 0): assert_var[0] 0x00000003"
		synd     = "mlx5_core 0000:73:00.0: print_health_info:470:(pid 0): synd 0x1: firmware internal error"
		otherHdr = "mlx5_core 0000:13:00.0: print_health_info:453:(pid 0): Health issue observed, firmware internal error, severity(3) ERROR:"
	)
	fatalF := fnd("MLX5_FW_FATAL", 0, "", fatal, reboot, missed)
	fatalF.Device = dev0
	alone := fnd("MLX5_FW_HEALTH", 0, "", warning, none, header)
	alone.Device = dev0
	other := fnd("MLX5_FW_HEALTH", 0, "", warning, none, otherHdr)
	other.Device = "0000:13:00.0"
	return []multiCase{
		{"mlx5 health report, one line per record", []string{missed, header, assert0, synd}, []finding.Finding{fatalF}},
		{"mlx5 health report, joined", []string{missed + "\n" + header + "\n" + assert0 + "\n" + synd}, []finding.Finding{fatalF}},
		{"mlx5 health report, other lines in between", []string{missed, "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready", header}, []finding.Finding{fatalF}},
		{"mlx5 health issue without a fatal line", []string{header, synd}, []finding.Finding{alone}},
		{"mlx5 health issue of another adapter", []string{missed, otherHdr}, []finding.Finding{fatalF, other}},
		{"mlx5 health issue long after the fatal line", append(append([]string{missed}, "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"), header), []finding.Finding{fatalF, alone}},
	}
}
