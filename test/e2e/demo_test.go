//go:build integration

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/procs"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// TestDemo runs `gpuheal demo` as a newcomer would, small and fast, with
// fewer drawn faults than the default pace (at --speed 8 on 8 nodes the
// breaker, one node, would hold the planted faults' repairs behind them): a
// fault is detected, its node repaired and the time to recover printed;
// the health gate catches the node with the planted latent fault; the
// inference node's double-bit error is repaired by resetting its GPU alone;
// a flapping InfiniBand link takes its node out and it is replaced;
// the lemon, a node that fails each time it is back, is rebooted once and
// retired at its second incident by the lemon rule; the status page answers; Ctrl-C stops everything and leaves no process
// behind.
func TestDemo(t *testing.T) {
	t.Parallel()
	binDir := testcluster.RequireBinaries(t, true, true)
	buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal-agent", "gpuheal-agent")
	buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal-controller", "gpuheal-controller")
	gpuheal := buildBinary(t, "github.com/gpuheal/gpuheal/cmd/gpuheal", "gpuheal")
	workDir := t.TempDir()
	controller := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	out := &lineLog{match: func(l string) bool { return strings.Contains(l, "RECOVERED in") }, found: make(chan string, 1)}
	demo := testproc.StartCommand(t, procs.Command{Path: gpuheal, Args: []string{"demo", "--nodes=8", "--speed=8", "--seed=3", "--faults-per-minute=0.5",
		"--bin-dir=" + binDir, "--work-dir=" + workDir, "--controller-address=" + controller,
		fmt.Sprintf("--agent-address=127.0.0.1:%d", freePort(t))}, Output: out, StopSignal: syscall.SIGINT})
	defer func() {
		if t.Failed() {
			t.Logf("demo output:\n%s", out.String())
			for _, f := range []string{"gpuheal-controller.log", "gpuheal-agent.log"} {
				b, _ := os.ReadFile(filepath.Join(workDir, f))
				t.Logf("%s (last 3000 bytes):\n%s", f, tail(b, 3000))
			}
		}
	}()

	select {
	case line := <-out.found:
		t.Logf("first recovery: %s", line)
	case <-demo.Done():
		t.Fatalf("demo exited before any recovery: %v", demo.Err())
	case <-time.After(4 * time.Minute):
		t.Fatal("no incident recovered within 4 minutes")
	}
	// The planted latent fault: the reboot clears what the agent sees, the
	// gate's NCCL check does not pass, and the node is replaced.
	testproc.EventuallyTrue(t, 3*time.Minute, "the gate fails gpu-node-0001's NCCL check and it is replaced", func() bool {
		s := out.String()
		return strings.Contains(s, "gpu-node-0001    check nccl (NCCL) FAILED: ") && strings.Contains(s, "floor 350 GB/s") &&
			strings.Contains(s, "(replace, replaced by gpu-node-0001-")
	})
	// By then the reboot path has run too (the first recovery is the
	// GPU reset, which neither cordons nor reboots).
	for _, want := range []string{"DETECTED GPUHealAcceleratorHealthy=False", "cordoned", "drained", "rebooting"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	// The double-bit error on the inference node's GPU 1: only the pod on
	// that GPU moves, the node is never cordoned, the GPU is reset.
	testproc.EventuallyTrue(t, 3*time.Minute, "the inference node's GPU 1 is reset after a partial drain", func() bool {
		return resetNode(out.String()) != ""
	})
	// The on-premises node's flapping InfiniBand cable: the network
	// condition takes it out, and it is replaced (a reboot keeps a cable).
	testproc.EventuallyTrue(t, 3*time.Minute, "the flapping link is detected and its node replaced", func() bool {
		return flappedAndReplaced(out.String()) != ""
	})
	t.Logf("flapping link: node %s replaced", flappedAndReplaced(out.String()))
	// The lemon: its first fault is rebooted away, its second (the demo
	// policy's lemon.incidents) retires it, and the line names the node
	// and both incidents.
	testproc.EventuallyTrue(t, 3*time.Minute, "the lemon node is rebooted once, then retired by the lemon rule", func() bool {
		return lemonRetired(out.String()) != ""
	})
	lemon := lemonRetired(out.String())
	t.Logf("lemon: %s", lemon)
	if f := strings.Fields(lemon); slices.Contains([]string{"gpu-node-0001", flappedAndReplaced(out.String()), resetNode(out.String())}, f[2]) {
		t.Errorf("the lemon is a node of another planted fault: %s", lemon)
	}
	node := resetNode(out.String())
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) > 3 && f[2] == node && strings.HasPrefix(f[3], "cordoned") {
			t.Errorf("the reset node %s was cordoned: %s", node, l)
		}
	}
	waitHTTP(t, "http://"+controller+"/status/api/fleet", 10*time.Second)

	// Ctrl-C in a terminal reaches the demo's process group.
	if err := demo.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-demo.Done():
		if err := demo.Err(); err != nil {
			t.Fatalf("demo exit after Ctrl-C: %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("demo did not stop within 90s of Ctrl-C")
	}
	// Every process the demo started had the work directory in its
	// arguments (kubeconfig, logs); none may be left.
	testproc.EventuallyTrue(t, 20*time.Second, "no process left with "+workDir+" in its command line", func() bool {
		return len(processesMentioning(workDir)) == 0
	})
}

// flappedAndReplaced is the node of the demo's output whose InfiniBand
// link was found flapping and which then recovered by a replacement, or "".
func flappedAndReplaced(out string) string {
	flapped := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		node, what := f[2], strings.Join(f[3:], " ")
		switch {
		case strings.HasPrefix(what, "DETECTED GPUHealNetworkingHealthy=False FabricLinkFlapping: infiniband port mlx5_3/1 "):
			flapped[node] = true
		case strings.HasPrefix(what, "RECOVERED in ") && strings.Contains(what, "(replace, replaced by "+node+"-") && flapped[node]:
			return node
		}
	}
	return ""
}

// lemonRetired is the demo's line of a node that got two planted faults,
// recovered from the first by a reboot, and was retired by the lemon rule
// with both incidents named and a replacement; or "".
func lemonRetired(out string) string {
	planted, rebooted := map[string]int{}, map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		node, what := f[2], strings.Join(f[3:], " ")
		switch {
		case strings.HasPrefix(what, "planted faulty-gpu on GPU 5, hardware incident "):
			planted[node]++
		case strings.HasPrefix(what, "RECOVERED in ") && strings.Contains(what, "(reboot)") && planted[node] == 1:
			rebooted[node] = true
		case strings.HasPrefix(what, "LEMON RETIRED (machine aws:///") && planted[node] == 2 && rebooted[node] &&
			strings.Contains(what, "): 2 hardware incidents in 720h, the rule's limit 2: "+node+"-") &&
			strings.Count(what, "(reboot)") == 2 &&
			strings.Contains(what, "; replaced by "+node+"-r"):
			return l
		}
	}
	return ""
}

// resetNode is the node of the demo's output whose GPU 1 was reset after
// a partial drain that moved one pod and which then recovered, or "".
func resetNode(out string) string {
	drained, reset := map[string]bool{}, map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		node, what := f[2], strings.Join(f[3:], " ")
		switch {
		case strings.HasPrefix(what, "partial drain: 1 pod(s) moved off GPU 1 "):
			drained[node] = true
		case strings.HasPrefix(what, "reset GPU 1 SUCCEEDED") && drained[node]:
			reset[node] = true
		case strings.HasPrefix(what, "RECOVERED in ") && strings.Contains(what, "(reset-gpu)") && reset[node]:
			return node
		}
	}
	return ""
}

// processesMentioning lists live processes whose command line contains s.
func processesMentioning(s string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), s) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(st), ") Z ") {
			continue // a zombie waits for its parent; it runs nothing
		}
		found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return found
}
