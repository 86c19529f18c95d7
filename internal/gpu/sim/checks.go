package sim

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// What the node's active checks print, in the tools' own formats (so that
// internal/validation reads them as it reads real runs): `dcgmi diag -r N
// -j` (DCGM 4.x JSON), nccl-tests' all_reduce_perf table and nvbandwidth's
// device-to-device matrix. Each is at most MaxCheckOutput bytes, what a
// container's termination message holds. Results derive from the node's
// state: a latent fault fails the check it hides from, a GPU that fell off
// the bus or vanished breaks every tool, a downed NVLink costs bandwidth.

// CheckRun is one run of a check tool: what it printed and its exit
// status (dcgmi exits non-zero when a test fails; nccl-tests and
// nvbandwidth only when CUDA fails them: a low figure is for the reader to
// judge).
type CheckRun struct {
	Output   []byte
	ExitCode int
}

// MaxCheckOutput bounds each output: Kubernetes keeps at most 4096 bytes
// of a container's termination message.
const MaxCheckOutput = 4096

// perf is a product's healthy figures on a full 8-GPU board.
type perf struct {
	// busBW is nccl-tests' all_reduce_perf "Avg bus bandwidth" in GB/s.
	busBW float64
	// d2d is nvbandwidth's device_to_device_memcpy_read_ce per pair, GB/s.
	d2d float64
}

// perfByModel: H100 and H200 all-reduce ~385 GB/s and A100 ~232 GB/s are
// the figures NVIDIA and operators publish for one HGX node (NVLink 4 and
// 3 through NVSwitch); H100's 371 GB/s device-to-device read is the
// nvbandwidth capture in internal/validation/testdata. The rest are
// ESTIMATES for the simulation, not measurements: H200 shares H100's
// NVLink, A100's d2d is its 300 GB/s per-direction NVLink at H100's
// efficiency, and V100 (NVLink 2, no NVSwitch) is its 150 GB/s per
// direction at the same efficiency.
var perfByModel = map[string]perf{
	"H100-80GB-HBM3": {busBW: 385, d2d: 371},
	"H200":           {busBW: 385, d2d: 371},
	"A100-SXM4-80GB": {busBW: 232, d2d: 247},
	"V100-SXM2-32GB": {busBW: 110, d2d: 123},
}

// noise hash streams of the check outputs (after those in noise.go).
const (
	hCheckNoise uint64 = iota + 100
	hCheckPid
)

// checkTick is what makes two runs differ a little: the second of the run.
func (n *Node) checkTickLocked() uint64 {
	return uint64(max(n.clock.Now().Sub(n.boot), 0) / time.Second)
}

// jitter is a deterministic factor in [1-amp, 1+amp] for GPU i at tick.
func (n *Node) jitter(i int, what, tick uint64, amp float64) float64 {
	return 1 + amp*(2*unit(hash(n.key, i, what, tick))-1)
}

// brokenGPUsLocked are the GPUs no tool can use: fallen off the bus or
// gone from it.
func (n *Node) brokenGPUsLocked() []int {
	var out []int
	for _, g := range n.gpus {
		if g.lost || g.gone {
			out = append(out, g.index)
		}
	}
	return out
}

// linkFactorLocked is the share of GPU i's NVLink bandwidth it still has:
// a latent nccl-bandwidth fault's factor times its links that are up.
func (n *Node) linkFactorLocked(i int) float64 {
	f := 1.0
	if l := n.latent[i]; l != nil && l.mode == LatentNCCLBandwidth {
		f = l.factor
	}
	g := n.gpus[i]
	if len(g.links) > 0 {
		up := 0
		for _, l := range g.links {
			if !l.down {
				up++
			}
		}
		f *= float64(up) / float64(len(g.links))
	}
	return f
}

// host is the node name as the tools print the host: at most 63 bytes.
func (n *Node) host() string {
	h := n.opts.NodeName
	if len(h) > 63 {
		h = h[:63]
	}
	return h
}

// dcgmTest is one test of a level: its category and the latent mode that
// fails it.
type dcgmTest struct {
	category, name string
	level          int
	failedBy       LatentMode
	warning        string // %d: the GPU
}

var dcgmTests = []dcgmTest{
	{"Deployment", "software", 1, "", ""},
	{"Integration", "pcie", 2, "", ""},
	{"Hardware", "memory", 2, LatentDCGMMemory, "Found 12 faulty memory elements on GPU %d"},
	{"Hardware", "diagnostic", 3, LatentDCGMDiagnostic, "GPU %d calculated wrong results in 4 of 138 matrices during this test"},
	{"Stress", "targeted_stress", 3, LatentDCGMDiagnostic, "GPU %d returned a miscompare of the stress kernel's results"},
	{"Hardware", "memory_bandwidth", 4, "", ""},
}

type dcgmWarning struct {
	Category int    `json:"error_category"`
	ID       int    `json:"error_id"`
	Warning  string `json:"warning"`
}

type dcgmResult struct {
	Group    string        `json:"entity_group"`
	GroupID  int           `json:"entity_group_id"`
	Entity   int           `json:"entity_id"`
	Status   string        `json:"status"`
	Warnings []dcgmWarning `json:"warnings,omitempty"`
}

type dcgmJSONTest struct {
	Name    string       `json:"name"`
	Results []dcgmResult `json:"results"`
	Summary struct {
		Status string `json:"status"`
	} `json:"test_summary"`
}

type dcgmCategory struct {
	Category string         `json:"category"`
	Tests    []dcgmJSONTest `json:"tests"`
}

type dcgmEntity struct {
	Entity   int    `json:"entity_id"`
	DeviceID string `json:"device_id"`
}

type dcgmGroup struct {
	Group    string       `json:"entity_group"`
	GroupID  int          `json:"entity_group_id"`
	Entities []dcgmEntity `json:"entities"`
}

type dcgmDoc struct {
	Diag struct {
		Categories []dcgmCategory `json:"test_categories"`
	} `json:"DCGM Diagnostic"`
	Groups   []dcgmGroup       `json:"entity_groups,omitempty"`
	Metadata map[string]string `json:"metadata"`
}

// DCGMDiag is what `dcgmi diag -r level -j` (DCGM 4.x) prints on the node
// now; level is 1–4 (clamped).
func (n *Node) DCGMDiag(level int) CheckRun {
	n.mu.Lock()
	defer n.mu.Unlock()
	level = min(max(level, 1), 4)
	out, failed := n.dcgmDocLocked(level, true)
	if len(out) > MaxCheckOutput {
		// Many failing GPUs: drop the passing results and the entity list,
		// which the verdict does not need.
		out, _ = n.dcgmDocLocked(level, false)
	}
	run := CheckRun{Output: out}
	if failed {
		run.ExitCode = dcgmExitFailed
	}
	return run
}

// dcgmExitFailed is dcgmi's exit status when a test fails
// (DCGM_ST_NVVS_ERROR, -226, as a byte).
const dcgmExitFailed = 30

func (n *Node) dcgmDocLocked(level int, withPasses bool) ([]byte, bool) {
	failed := false
	var doc dcgmDoc
	for _, t := range dcgmTests {
		if t.level > level {
			continue
		}
		jt := dcgmJSONTest{Name: t.name}
		jt.Summary.Status = "Pass"
		for _, g := range n.gpus {
			r := dcgmResult{Group: "GPU", GroupID: 1, Entity: g.index, Status: "Pass"}
			switch {
			case g.lost || g.gone:
				r.Status = "Fail"
				r.Warnings = []dcgmWarning{{Category: 1, ID: 46, Warning: fmt.Sprintf("GPU %d is inaccessible: it fell off the bus or is not enumerated", g.index)}}
			case t.failedBy != "" && n.latent[g.index] != nil && n.latent[g.index].mode == t.failedBy:
				r.Status = "Fail"
				r.Warnings = []dcgmWarning{{Category: 6, ID: 83, Warning: fmt.Sprintf(t.warning, g.index)}}
			}
			if r.Status != "Pass" {
				jt.Summary.Status, failed = "Fail", true
			} else if !withPasses {
				continue
			}
			jt.Results = append(jt.Results, r)
		}
		cat := len(doc.Diag.Categories) - 1
		if cat < 0 || doc.Diag.Categories[cat].Category != t.category {
			doc.Diag.Categories = append(doc.Diag.Categories, dcgmCategory{Category: t.category})
			cat++
		}
		doc.Diag.Categories[cat].Tests = append(doc.Diag.Categories[cat].Tests, jt)
	}
	if withPasses {
		group := dcgmGroup{Group: "GPU", GroupID: 1}
		for _, g := range n.gpus {
			group.Entities = append(group.Entities, dcgmEntity{Entity: g.index, DeviceID: fmt.Sprintf("%04x", n.model.deviceID)})
		}
		doc.Groups = []dcgmGroup{group}
	}
	doc.Metadata = map[string]string{"DCGM Version": "4.2.3", "Driver Version Detected": n.driver}
	out, _ := json.Marshal(doc) // plain structs: cannot fail
	return append(out, '\n'), failed
}

// ncclSizes are the message sizes of the simulated run (-b 512M -e 8G -f
// 2) and the share of the peak bus bandwidth each reaches.
var ncclSizes = []struct {
	bytes int64
	share float64
}{{512 << 20, 0.93}, {1 << 30, 0.97}, {2 << 30, 0.99}, {4 << 30, 1.0}, {8 << 30, 1.01}}

// NCCLAllReduce is what nccl-tests' `all_reduce_perf -b 512M -e 8G -f 2
// -g N` prints on the node now: the all-reduce runs at the pace of its
// slowest GPU, so one GPU's degraded NVLink lowers every row.
func (n *Node) NCCLAllReduce() CheckRun {
	n.mu.Lock()
	defer n.mu.Unlock()
	tick := n.checkTickLocked()
	gpus := len(n.gpus)
	var b strings.Builder
	fmt.Fprintf(&b, "# nThread 1 nGpus %d minBytes %d maxBytes %d step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n",
		gpus, ncclSizes[0].bytes, ncclSizes[len(ncclSizes)-1].bytes)
	pid := 1000 + hash(n.key, 0, hCheckPid, tick)%60000
	for _, g := range n.gpus {
		fmt.Fprintf(&b, "#  Rank %2d Group  0 Pid %6d on %s device %2d [%s] %s\n", g.index, pid, n.host(), g.index, strings.TrimSuffix(g.bus, ".0"), n.model.name)
	}
	if broken := n.brokenGPUsLocked(); len(broken) > 0 {
		// What nccl-tests prints when CUDA cannot reach a device: the run
		// stops before the table's end, so there is no average.
		fmt.Fprintf(&b, "%s: Test CUDA failure common.cu:1006 'unspecified launch failure'\n .. %s pid %d: Test failure common.cu:1133\n", n.host(), n.host(), pid)
		return CheckRun{Output: []byte(b.String()), ExitCode: 1}
	}
	b.WriteString("#\n#                                                              out-of-place                       in-place          \n" +
		"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
		"#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n")
	// The shares are scaled so that the average is the product's figure.
	var shares float64
	for _, sz := range ncclSizes {
		shares += sz.share / float64(len(ncclSizes))
	}
	peak := perfByModel[n.model.key].busBW / shares
	slowest := 1.0
	for i := range n.gpus {
		slowest = min(slowest, n.linkFactorLocked(i))
	}
	// busbw = algbw * 2(n-1)/n: a single GPU moves nothing between GPUs.
	busFactor := 2 * float64(gpus-1) / float64(gpus)
	var sum float64
	var count int
	for si, sz := range ncclSizes {
		fmt.Fprintf(&b, "%12d  %12d  %8s  %6s  %6d", sz.bytes, sz.bytes/4, "float", "sum", -1)
		for place := range 2 {
			bus := peak * sz.share * slowest * n.jitter(si, hCheckNoise, tick+uint64(place)<<32, 0.004)
			bus = round(bus, 2)
			var alg, us float64
			if busFactor > 0 {
				alg = bus / busFactor
				us = float64(sz.bytes) / alg / 1e3
			} else {
				bus, alg, us = 0, 0, 0
			}
			sum += bus
			count++
			fmt.Fprintf(&b, "  %7.0f  %6.2f  %6.2f  %5d", us, alg, bus, 0)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %.3f \n#\n", sum/float64(count))
	return CheckRun{Output: []byte(b.String())}
}

// NVBandwidth is what `nvbandwidth -t device_to_device_memcpy_read_ce`
// prints on the node now: each pair runs at the pace of the slower link
// of the two GPUs.
func (n *Node) NVBandwidth() CheckRun {
	n.mu.Lock()
	defer n.mu.Unlock()
	tick := n.checkTickLocked()
	var b strings.Builder
	fmt.Fprintf(&b, "nvbandwidth Version: v0.7\nBuilt from Git version: v0.7\n\n"+
		"NOTE: This tool reports current measured bandwidth on your system.\n"+
		"Additional system-specific tuning may be required to achieve maximal peak bandwidth.\n\n"+
		"CUDA Runtime Version: 12080\nCUDA Driver Version: 12080\nDriver Version: %s\n\n", n.driver)
	if broken := n.brokenGPUsLocked(); len(broken) > 0 {
		fmt.Fprintf(&b, "ERROR: cuInit failed: CUDA_ERROR_NO_DEVICE on device %d\n", broken[0])
		return CheckRun{Output: []byte(b.String()), ExitCode: 1}
	}
	for _, g := range n.gpus {
		fmt.Fprintf(&b, "Device %d: %s\n", g.index, n.model.name)
	}
	const test = "device_to_device_memcpy_read_ce"
	if len(n.gpus) < 2 {
		fmt.Fprintf(&b, "\nWaived %s: needs at least two devices.\n", test)
		return CheckRun{Output: []byte(b.String())}
	}
	fmt.Fprintf(&b, "\nRunning %s.\nmemcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n     ", test)
	for j := range n.gpus {
		fmt.Fprintf(&b, "%10d", j)
	}
	b.WriteString("\n")
	d2d := perfByModel[n.model.key].d2d
	var sum float64
	for i := range n.gpus {
		fmt.Fprintf(&b, "%-5d", i)
		for j := range n.gpus {
			if i == j {
				fmt.Fprintf(&b, "%10s", "N/A")
				continue
			}
			v := round(d2d*min(n.linkFactorLocked(i), n.linkFactorLocked(j))*n.jitter(i*8+j, hCheckNoise, tick, 0.003), 2)
			sum += v
			fmt.Fprintf(&b, "%10.2f", v)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nSUM %s %.2f\n", test, sum)
	return CheckRun{Output: []byte(b.String())}
}
