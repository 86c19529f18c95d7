//go:build integration

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// TestAgentRidesOutAPIServerOutage cuts the agent off the API server for
// 30 s (a TCP proxy between them stops accepting and drops its
// connections), lets a GPU fall off the bus meanwhile, and checks that the
// condition reaches the Node once the API server is reachable again.
func TestAgentRidesOutAPIServerOutage(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{Kwok: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	names, err := testenv.CreateGPUNodes(ctx, env.Client, "outage", 1)
	if err != nil {
		t.Fatal(err)
	}
	node := names[0]

	target, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, target.Host)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	kc, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range kc.Clusters {
		c.Server = "https://" + proxy.addr
	}
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	kernelLog := filepath.Join(dir, "kmsg")
	if err := os.WriteFile(kernelLog, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	startClusterAgent(t, node, kubeconfig, kernelLog, filepath.Join(dir, "state"))
	waitCondition(ctx, t, env.Client, node, corev1.ConditionTrue)

	proxy.cut()
	outage := time.Now()
	appendLines(t, kernelLog, "4,1,5000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
	// 30 s without the API server; the test's own client goes direct.
	testproc.Consistently(t, 30*time.Second-time.Since(outage), "the condition unchanged while the agent cannot reach the API server (else the proxy leaks)", func() bool {
		c := conditionNow(ctx, t, env, node)
		return c == nil || c.Status != corev1.ConditionFalse
	})
	proxy.restore()
	back := time.Now()
	sick := waitCondition(ctx, t, env.Client, node, corev1.ConditionFalse)
	t.Logf("condition False %v after the API server came back (reason %s)", time.Since(back).Round(time.Millisecond), sick.Reason)
	if sick.Reason != "NvidiaXID79Error" {
		t.Errorf("reason %q, want NvidiaXID79Error", sick.Reason)
	}
}

func conditionNow(ctx context.Context, t *testing.T, env *testenv.Env, node string) *corev1.NodeCondition {
	t.Helper()
	var n corev1.Node
	if err := env.Client.Get(ctx, clientKey(node), &n); err != nil {
		return nil
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1alpha1.ConditionGPUHealAcceleratorHealthy {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// cutProxy forwards TCP to target until cut: then it closes its listener
// and every open connection, as a network partition would look to the
// agent; restore listens on the same address again.
type cutProxy struct {
	t      *testing.T
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	p := &cutProxy{t: t, target: target, addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), conns: map[net.Conn]bool{}}
	p.restore()
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) restore() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("proxy listen %s: %v", p.addr, err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go p.accept(ln)
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *cutProxy) accept(ln net.Listener) {
	for {
		in, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		if p.ln != ln { // cut while dialing
			p.mu.Unlock()
			in.Close()
			out.Close()
			return
		}
		p.conns[in], p.conns[out] = true, true
		p.mu.Unlock()
		go pipe(in, out)
		go pipe(out, in)
	}
}

func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}
