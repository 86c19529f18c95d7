package agent

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakeclock "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu/sim"
	"github.com/gpuheal/gpuheal/internal/poll"
)

// writeSysfs makes a one-device, one-port InfiniBand tree under root.
func writeSysfs(t *testing.T, root, state string, linkDowned int) {
	t.Helper()
	port := filepath.Join(root, "class", "infiniband", "mlx5_0", "ports", "1")
	for name, v := range map[string]string{
		"state": state, "phys_state": "5: LinkUp", "rate": "400 Gb/sec (4X NDR)", "link_layer": "InfiniBand",
		"counters/link_downed": string(rune('0' + linkDowned)), "counters/symbol_error": "0",
	} {
		p := filepath.Join(port, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCollectReadsTheFabric: with --fabric the collector puts the host's
// RDMA devices into the snapshot, with the expected count of the node.
func TestCollectReadsTheFabric(t *testing.T) {
	node, err := sim.New(sim.Options{NodeName: "n1", GPUs: 8, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	writeSysfs(t, root, "4: ACTIVE", 2)
	o := &Options{Fabric: true, SysfsPath: root, Backend: BackendNVML}
	c, _ := newTestCollector(t, node, 8)
	c.readFabric = fabricReader(o)
	defer func() {
		if err := c.readFabric.Close(); err != nil {
			t.Error(err)
		}
	}()
	c.expectedRDMA = func() int { return 8 }
	snap, err := c.collectOnce(context.Background(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	f := snap.Fabric
	if f == nil || len(f.Devices) != 1 || f.ExpectedDevices != 8 {
		t.Fatalf("fabric %+v, want mlx5_0 of 8 expected", f)
	}
	p := f.Devices[0].Ports[0]
	if p.State != "ACTIVE" || p.Counters["link_downed"] != 2 || p.RateGbps == nil || *p.RateGbps != 400 {
		t.Errorf("port %+v", p)
	}
	if fabricReader(&Options{Fabric: false}) != nil || fabricReader(&Options{Fabric: true, Backend: BackendSim}) != nil {
		t.Error("a fabric reader with --fabric=false or for the sim backend")
	}
}

// TestFollowFabricManagerLog: lines the Fabric Manager writes after the
// agent starts become findings; what the log held before does not.
func TestFollowFabricManagerLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fabricmanager.log")
	old := "[Jul 23 2024 07:53:55] [ERROR] [tid 841] detected NVSwitch fatal error 20034 on fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 33\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.NewFakeClock(time.Now())
	got := make(chan finding.Finding, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		followFabricManagerLog(ctx, path, clk, func(f finding.Finding) { got <- f }, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	}()
	defer func() { cancel(); <-done }()
	deadline, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	// The first poll is done once the follower waits on its ticker.
	if err := poll.Until(deadline, "the first poll", 5*time.Millisecond, func(context.Context) (bool, error) { return clk.HasWaiters(), nil }); err != nil {
		t.Fatal(err)
	}
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString("[Dec 07 2026 01:30:00] [ERROR] [tid 900] detected NVSwitch fatal error 20034 on fid 0 on NVSwitch pci bus id 00000000:87:00.0 physical id 4 port 12\n"); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	var f finding.Finding
	err = poll.Until(deadline, "the new line's finding", 5*time.Millisecond, func(context.Context) (bool, error) {
		clk.Step(time.Second)
		select {
		case f = <-got:
			return true, nil
		default:
			return false, nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.Code != "FM_NVSWITCH_FATAL" || f.Severity != finding.Fatal || f.Device != "0000:87:00.0" {
		t.Errorf("finding %+v, want the new line's fatal NVSwitch error on 0000:87:00.0", f)
	}
	select {
	case f := <-got:
		t.Errorf("a second finding %+v (the old line is not to be read)", f)
	default:
	}
}

// TestRDMAFromNode: the instance type names the most EFA devices it takes;
// a count the operator gave (--expected-rdma-devices) is not replaced.
func TestRDMAFromNode(t *testing.T) {
	node := func(typ string) *kubecore.Node {
		return &kubecore.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelInstanceType: typ}}}
	}
	for _, tc := range []struct {
		typ   string
		fixed bool
		want  int
	}{
		{"p5.48xlarge", false, 32},
		{"p4d.24xlarge", false, 4},
		{"p5.48xlarge", true, 0},
		{"g6e.xlarge", false, 0},
		{"", false, 0},
	} {
		if got := rdmaFromNode(node(tc.typ), tc.fixed); got != tc.want {
			t.Errorf("%q fixed=%v: %d, want %d", tc.typ, tc.fixed, got, tc.want)
		}
	}
}
