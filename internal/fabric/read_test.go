package fabric

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from the current output")

// TestReadFixtures reads each real capture (testdata/README.md) and
// compares the whole Snapshot with testdata/<fixture>.json. The JSON was
// checked against a separate walk of the trees when it was written;
// review a diff of it after -update as a change of behavior.
func TestReadFixtures(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"connectx-ib", "connectx-roce", "efa-p4d"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := Read(context.Background(), ReadOptions{Root: fixture(t, name)})
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".json")
			if *update {
				b, err := json.MarshalIndent(got, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			b, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			var want Snapshot
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("Read(%s) (-want +got):\n%s", name, diff)
			}
		})
	}
}

// One device of each fixture spelled out here, so that the facts the
// rest of gpuheal relies on do not rest on the golden files alone.
func TestReadFixtureFacts(t *testing.T) {
	t.Parallel()
	read := func(name string) *Snapshot {
		s, err := Read(context.Background(), ReadOptions{Root: fixture(t, name)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ib := read("connectx-ib")
	if len(ib.Devices) != 8 {
		t.Fatalf("connectx-ib: %d devices, want 8", len(ib.Devices))
	}
	d := ib.Devices[1] // mlx5_1, whose 8-bit link_downed saturated at 255
	d.Ports[0].Counters = map[string]uint64{"link_downed": d.Ports[0].Counters["link_downed"],
		"port_xmit_data": d.Ports[0].Counters["port_xmit_data"]}
	d.Ports[0].HWCounters = map[string]uint64{"out_of_sequence": d.Ports[0].HWCounters["out_of_sequence"]}
	want := Device{Name: "mlx5_1", Driver: "mlx5_core", Kind: KindInfiniBand, PCIBusID: "0000:3c:00.0",
		BoardID: "MT_0000000838", FirmwareVersion: "28.41.1000",
		Ports: []Port{{Num: 1, State: "ACTIVE", PhysState: "LinkUp", RateGbps: f64(400), LinkLayer: "InfiniBand",
			Counters:   map[string]uint64{"link_downed": 255, "port_xmit_data": 230442669431839},
			HWCounters: map[string]uint64{"out_of_sequence": 0}}}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("connectx-ib mlx5_1 (-want +got):\n%s", diff)
	}

	roce := read("connectx-roce").Devices[0]
	if roce.Kind != KindRoCE || *roce.Ports[0].RateGbps != 200 || roce.Ports[0].HWCounters["roce_adp_retrans"] != 3 {
		t.Errorf("connectx-roce: kind %q, rate %v, roce_adp_retrans %d; want roce, 200, 3",
			roce.Kind, *roce.Ports[0].RateGbps, roce.Ports[0].HWCounters["roce_adp_retrans"])
	}

	efa := read("efa-p4d")
	e := efa.Devices[2] // rdmap16s27 sorts after rdmap160s27
	wantEFA := Device{Name: "rdmap16s27", Driver: "efa", Kind: KindEFA, PCIBusID: "0000:10:1b.0",
		Ports: []Port{{Num: 1, State: "ACTIVE", PhysState: "LinkUp", RateGbps: f64(100), LinkLayer: "Unknown",
			HWCounters: map[string]uint64{
				"rdma_read_bytes": 1047241667482, "rdma_read_resp_bytes": 1038950461928, "rdma_read_wr_err": 0,
				"rdma_read_wrs": 3338488, "rdma_write_bytes": 0, "rdma_write_recv_bytes": 0,
				"rdma_write_wr_err": 0, "rdma_write_wrs": 0, "recv_bytes": 6187744962, "recv_wrs": 3319097,
				"rx_bytes": 1053429412444, "rx_drops": 0, "rx_pkts": 6657585, "send_bytes": 8447687166,
				"send_wrs": 3577494, "tx_bytes": 1047398149094, "tx_pkts": 130907467,
			}}}}
	if diff := cmp.Diff(wantEFA, e); diff != "" {
		t.Errorf("efa-p4d rdmap16s27 (-want +got):\n%s", diff)
	}
}

// A node without RDMA has no class/infiniband: zero devices, no error.
func TestReadNoRDMA(t *testing.T) {
	t.Parallel()
	got, err := Read(context.Background(), ReadOptions{Root: t.TempDir(), ExpectedDevices: 4})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&Snapshot{ExpectedDevices: 4, Devices: []Device{}}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A class directory that is there but cannot be listed is the node's
// error, not "no RDMA".
func TestReadClassUnreadable(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, root, "class/infiniband", "not a directory\n")
	got, err := Read(context.Background(), ReadOptions{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	want := &Snapshot{Devices: []Device{}, Errors: []string{"class/infiniband: not a directory"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestReadCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s, err := Read(ctx, ReadOptions{Root: fixture(t, "efa-p4d")}); err == nil {
		t.Errorf("Read with a canceled context = %d devices, nil error; want context.Canceled", len(s.Devices))
	}
}
