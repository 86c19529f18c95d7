package detect

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/kmsg"
)

// dev is the finding a fabric line of the table expects: node-level (GPU
// empty), the adapter in Device, the line itself as the message.
type dev struct {
	code   string
	device string
	sev    finding.Severity
	act    finding.Action
}

// TestFabricLineForms has one case per line form of the ConnectX and EFA
// drivers. Where a line is marked "format", it is written from the
// driver's format string (testdata/README.md says which); the others are
// quoted from the captures named there.
func TestFabricLineForms(t *testing.T) {
	tests := []struct {
		name string
		line string
		want *dev // nil: not a finding
	}{
		// ConnectX module events (mlx5_core events.c).
		{"cable unplugged (gpud capture)", "mlx5_core 0000:41:00.1: Port module event: module 1, Cable unplugged",
			&dev{"MLX5_CABLE_UNPLUGGED", "0000:41:00.1", warning, none}},
		{"cable plugged (arm-nas#16 capture)", "mlx5_core 0004:01:00.0: Port module event: module 0, Cable plugged", nil},
		{"cable disabled (format)", "mlx5_core 0000:0c:00.0: Port module event: module 0, Cable disabled",
			&dev{"MLX5_MODULE_DISABLED", "0000:0c:00.0", warning, none}},
		{"module error, bus stuck (format, old function prefix)", "mlx5_core 0000:0c:00.0: mlx5_port_module_event:1132:(pid 0): Port module event[error]: module 0, Cable error, Bus stuck (I2C or data shorted)",
			&dev{"MLX5_MODULE_ERROR", "0000:0c:00.0", fatal, replace}},
		{"module error, power budget (format)", "mlx5_core 0000:0c:00.0: port_module:272:(pid 0): Port module event[error]: module 0, Cable error, Power budget exceeded",
			&dev{"MLX5_MODULE_ERROR", "0000:0c:00.0", fatal, replace}},
		{"module error, old spelling (format)", "mlx5_core 0000:0c:00.0: Port module event[error]: module 1, Cable error, Bus stuck(I2C or data shorted)",
			&dev{"MLX5_MODULE_ERROR", "0000:0c:00.0", fatal, replace}},
		{"module high temperature (gpud capture)", "mlx5_core 0000:5c:00.0: mlx5_port_module_event:1131:(pid 0): Port module event[error]: module 0, Cable error, High Temperature",
			&dev{"MLX5_HIGH_TEMPERATURE", "0000:5c:00.0", warning, none}},
		{"ASIC high temperature (format)", "mlx5_core 0000:61:00.0: temp_warn:171:(pid 0): High temperature on sensors with bit set 0 0x1.",
			&dev{"MLX5_HIGH_TEMPERATURE", "0000:61:00.0", warning, none}},
		{"sensor name after the warning (format)", "mlx5_core 0000:61:00.0: print_sensor_names_in_bit_set:174:(pid 0): Sensor name[0]: asic", nil},
		{"insufficient slot power (gpud capture)", "mlx5_core 0000:5c:00.0: mlx5_pcie_event:299:(pid 268269): Detected insufficient power on the PCIe slot (27W).",
			&dev{"MLX5_PCIE_POWER", "0000:5c:00.0", warning, none}},
		{"sufficient slot power (arm-nas#16 capture)", "mlx5_core 0004:01:00.0: mlx5_pcie_event:294:(pid 542): PCIe slot advertised sufficient power (75W).", nil},
		// The Ethernet interface's carrier (mlx5e netdev_info).
		{"link down (format)", "mlx5_core 0000:41:00.0 enp65s0f0np0: Link down",
			&dev{"MLX5_LINK_DOWN", "0000:41:00.0", warning, none}},
		{"link up (gpud capture)", "mlx5_core 0000:41:00.0 enp65s0f0np0: Link up", nil},
		{"interface renamed (gpud capture)", "mlx5_core 0000:41:00.0 enp65s0f0np0: renamed from eth0", nil},
		// Firmware health (health.c).
		{"fatal sensor (LKML capture)", "mlx5_core 0001:00:00.0: poll_health:695:(pid 3222): Fatal error 1 detected",
			&dev{"MLX5_FW_FATAL", "0001:00:00.0", fatal, reboot}},
		{"fatal, no number (linux-pci capture)", "mlx5_core 0004:01:00.1: print_health:819:(pid 0): Fatal error detected",
			&dev{"MLX5_FW_FATAL", "0004:01:00.1", fatal, reboot}},
		{"missed heartbeats (format)", "mlx5_core 0000:73:00.0: poll_health:1151:(pid 0): device's health compromised - reached miss count",
			&dev{"MLX5_FW_FATAL", "0000:73:00.0", fatal, reboot}},
		{"missed heartbeats, old kernels (format)", "mlx5_core 0000:73:00.0: poll_health:180:(pid 0): device's health compromised",
			&dev{"MLX5_FW_FATAL", "0000:73:00.0", fatal, reboot}},
		{"recovery aborted (LKML capture)", "mlx5_core 0001:00:00.0: mlx5_health_try_recover:313:(pid 3174): health recovery flow aborted, PCI reads still not working",
			&dev{"MLX5_FW_FATAL", "0001:00:00.0", fatal, reboot}},
		{"recovery failed (format)", "mlx5_core 0000:73:00.0: mlx5_fw_fatal_reporter_err_work:760:(pid 1234): health recovery failed",
			&dev{"MLX5_FW_FATAL", "0000:73:00.0", fatal, reboot}},
		{"driver unloads (format)", "mlx5_core 0000:73:00.0: mlx5_fw_fatal_reporter_err_work:773:(pid 1234): Driver is in error state. Unloading",
			&dev{"MLX5_FW_FATAL", "0000:73:00.0", fatal, reboot}},
		{"recovery succeeded (format)", "mlx5_core 0000:73:00.0: health recovery succeeded", nil},
		{"health issue, error (format)", "mlx5_core 0000:73:00.0: print_health_info:453:(pid 0): Health issue observed, firmware internal error, severity(3) ERROR:",
			&dev{"MLX5_FW_HEALTH", "0000:73:00.0", warning, none}},
		{"health issue, critical (format)", "mlx5_core 0000:73:00.0: print_health_info:453:(pid 0): Health issue observed, unrecoverable hardware error, severity(2) CRITICAL:",
			&dev{"MLX5_FW_HEALTH", "0000:73:00.0", fatal, reboot}},
		{"syndrome detail (LKML capture)", "mlx5_core 0001:00:00.0: print_health_info:384:(pid 3222): synd 0xff: unrecognized error", nil},
		{"assert detail (LKML capture)", "mlx5_core 0001:00:00.0: print_health_info:373:(pid 3222): assert_var[0] 0xffffffff", nil},
		{"command timeout (netdev capture)", "mlx5_core 0000:56:00.0: wait_func:1189:(pid 72061): ACCESS_REG(0x805) timeout. Will cause a leak of a command resource",
			&dev{"MLX5_CMD_TIMEOUT", "0000:56:00.0", fatal, reboot}},
		{"async command timeout (format)", "mlx5_core 0000:56:00.0: cb_timeout_handler:900:(pid 8): cmd[3]: CREATE_MKEY(0x200) Async, timeout. Will cause a leak of a command resource",
			&dev{"MLX5_CMD_TIMEOUT", "0000:56:00.0", fatal, reboot}},
		{"async command recovered (format)", "mlx5_core 0000:56:00.0: cb_timeout_handler:880:(pid 8): cmd[3]: CREATE_MKEY(0x200) Async, recovered after timeout", nil},
		{"PCI error, needs reset (linux-pci capture)", "mlx5_core 0004:01:00.0: mlx5_pci_err_detected Device state = 2 pci_status: 0. Exit, result = 3, need reset",
			&dev{"MLX5_PCI_ERROR", "0004:01:00.0", warning, none}},
		{"PCI error, disconnect (format)", "mlx5_core 0004:01:00.0: mlx5_pci_err_detected Device state = 2 health sensors: 1 pci_status: 0. Exit, result = 4, disconnect",
			&dev{"MLX5_PCI_ERROR", "0004:01:00.0", fatal, reboot}},
		{"PCI error entry (linux-pci capture)", "mlx5_core 0004:01:00.0: mlx5_pci_err_detected Device state = 1 health sensors: 1 pci_status: 1. Enter, pci channel state = 2", nil},
		{"old name prefix (tinycore-redpill#9 capture)", "mlx5_core 0000:03:00.0: 0000:03:00.0:handle_hca_cap:438:(pid 6016): log_max_qp value in current profile is 18, changing it to HCA capability limit (17)", nil},
		{"firmware version (arm-nas#16 capture)", "mlx5_core 0004:01:00.0: firmware version: 16.27.2048", nil},
		{"syslog tag left in", "kernel: mlx5_core 0000:41:00.1: Port module event: module 1, Cable unplugged",
			&dev{"MLX5_CABLE_UNPLUGGED", "0000:41:00.1", warning, none}},
		{"AER on a NIC stays no finding", "mlx5_core 0000:0c:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)", nil},
		// AWS EFA (amzn-drivers efa_com.c, efa_main.c).
		{"command failed (Neuron docs capture)", "efa 0000:a0:1a.0 rdmap160s26: Failed to process command DEREG_MR (opcode 8) comp_status 7 err -22",
			&dev{"EFA_CMD_FAILED", "0000:a0:1a.0", warning, none}},
		{"command not submitted (format)", "efa 0000:a0:1a.0 rdmap160s26: Failed to submit command CREATE_QP (opcode 6) err -19",
			&dev{"EFA_CMD_FAILED", "0000:a0:1a.0", warning, none}},
		{"no completion, class prefix (NVSentinel test line)", "infiniband rdmap16s27: The device didn't send any completion for admin cmd CREATE_QP(6) status 0 (ctx 0x000000001d2f9d31, sq producer: 12, sq consumer: 11, cq consumer: 11)",
			&dev{"EFA_ADMIN_QUEUE_FAILED", "rdmap16s27", fatal, reboot}},
		{"no completion (format)", "efa 0000:10:1c.0 rdmap16s28: The device didn't send any completion for admin cmd MODIFY_QP(7) status 1 (id: 12, sq producer: 40, sq consumer: 39, cq consumer: 39)",
			&dev{"EFA_ADMIN_QUEUE_FAILED", "0000:10:1c.0", fatal, reboot}},
		{"completion without interrupt (format)", "efa 0000:10:1c.0 rdmap16s28: The device sent a completion but the driver didn't receive any MSI-X interrupt for admin cmd CREATE_CQ(4) status 2 (id: 3, sq producer: 8, sq consumer: 7, cq consumer: 7)",
			&dev{"EFA_ADMIN_QUEUE_FAILED", "0000:10:1c.0", fatal, reboot}},
		{"polling timeout (format)", "efa 0000:00:06.0 efa_0: Wait for completion (polling) timeout",
			&dev{"EFA_ADMIN_QUEUE_FAILED", "0000:00:06.0", fatal, reboot}},
		{"admin queue closed (format)", "infiniband efa_0: Admin queue is closed",
			&dev{"EFA_ADMIN_QUEUE_FAILED", "efa_0", fatal, reboot}},
		{"register read timeout (format)", "efa 0000:00:06.0 efa_0: Reading register timed out. expected: req id[5] offset[0x4] actual: req id[4] offset[0x0]",
			&dev{"EFA_DEVICE_FAILED", "0000:00:06.0", fatal, reboot}},
		{"not ready at load (format)", "efa 0000:00:06.0 efa_0: Device isn't ready, abort com init 0x0",
			&dev{"EFA_DEVICE_FAILED", "0000:00:06.0", fatal, reboot}},
		{"reset stuck (format)", "efa 0000:00:06.0 efa_0: Reset indication didn't turn off",
			&dev{"EFA_DEVICE_FAILED", "0000:00:06.0", fatal, reboot}},
		{"init failed (format)", "efa 0000:00:06.0: EFA device init failed",
			&dev{"EFA_DEVICE_FAILED", "0000:00:06.0", fatal, reboot}},
		{"asynchronous event (format)", "efa 0000:00:06.0 efa_0: Unknown event was received or event with unimplemented handler",
			&dev{"EFA_ASYNC_EVENT", "0000:00:06.0", warning, none}},
		{"device enabled (LKML capture)", "efa 0000:00:1b.0: enabling device (0010 -> 0012)", nil},
		{"irq set up (LKML capture)", "efa 0000:00:1b.0: Setup irq:191 name:efa-mgmnt@pci:0000:00:1b.0", nil},
		{"registered (LKML capture)", "efa 0000:00:1b.0 efa_0: IB device registered", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []finding.Finding
			if tt.want != nil {
				f := fnd(tt.want.code, 0, "", tt.want.sev, tt.want.act, tt.line)
				f.Device = tt.want.device
				want = append(want, f)
			}
			if diff := cmp.Diff(want, newDetector(t).Detect(tt.line, t0)); diff != "" {
				t.Errorf("Detect(%q) (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

// TestFabricFixtures runs real kernel-log captures through the kernel
// log's own reader, as diagnose and the agent do.
func TestFabricFixtures(t *testing.T) {
	type short struct{ Code, Device, GPU, Sev, Act string }
	tests := []struct {
		file string
		want []short
	}{
		// A ConnectX-5 and -7 behind a root port whose DPC containment
		// took them off the bus: the firmware health poller's fatal
		// report, PCI error recovery asking for a reset, the recovery
		// flow giving up. The root port's AER lines are not the nvidia
		// driver's, so no finding.
		{"testdata/dmesg-mlx5-dpc-recovery.log", []short{
			{"MLX5_FW_FATAL", "0004:01:00.1", "", "fatal", "reboot"},
			{"MLX5_PCI_ERROR", "0004:01:00.0", "", "warning", "none"},
			{"MLX5_FW_FATAL", "0004:01:00.1", "", "fatal", "reboot"},
			{"MLX5_PCI_ERROR", "0004:01:00.1", "", "warning", "none"},
		}},
		// One fatal report with its health buffer dump (one finding),
		// then the recovery flow giving up.
		{"testdata/dmesg-mlx5-fw-fatal.log", []short{
			{"MLX5_FW_FATAL", "0001:00:00.0", "", "fatal", "reboot"},
			{"MLX5_FW_FATAL", "0001:00:00.0", "", "fatal", "reboot"},
		}},
		// A boot of a node whose dual-port card has one port cabled: the
		// other port's "Cable unplugged" at every boot is why that line
		// is a warning, not a fault. The NVIDIA module loads and the
		// node panics later; neither is a finding.
		{"testdata/dmesg-r-mlx5-cable-unplugged.log", []short{
			{"MLX5_CABLE_UNPLUGGED", "0000:41:00.1", "", "warning", "none"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var got []short
			for _, f := range detectThroughReader(t, tt.file) {
				got = append(got, short{f.Code, f.Device, f.GPU, string(f.Severity), string(f.Action)})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// detectThroughReader reads a capture with internal/kmsg's reader (every
// text form it knows) and runs one detector over its records.
func detectThroughReader(t *testing.T, name string) []finding.Finding {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := kmsg.NewReader(f, kmsg.Options{BootTime: bootTime, Location: time.UTC})
	d := newDetector(t)
	var out []finding.Finding
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = d.Append(out, rec.Message, rec.Time)
	}
}
