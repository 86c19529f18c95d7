//go:build integration

package remediation

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", testproc.FreePort(t))
}

// TestLeaderFailover runs two controller replicas against the real API
// server: one leads, and when it shuts down it releases the Lease so the
// standby takes over without waiting for the lease to expire.
func TestLeaderFailover(t *testing.T) {
	t.Parallel()
	env := testcluster.Start(t, testenv.Options{})
	opts := func() ManagerOptions {
		return ManagerOptions{
			RestConfig:              env.Config,
			MetricsAddress:          "0",
			HealthAddress:           freeAddr(t),
			LeaderElection:          true,
			LeaderElectionNamespace: "default",
			LeaderElectionID:        "gpuheal-controller-test",
			GracefulShutdown:        5 * time.Second,
		}
	}
	a, b := opts(), opts()
	mgrA, err := NewManager(a)
	if err != nil {
		t.Fatal(err)
	}
	mgrB, err := NewManager(b)
	if err != nil {
		t.Fatal(err)
	}
	ctxA, stopA := context.WithCancel(context.Background())
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	go func() { doneA <- mgrA.Start(ctxA) }()
	select {
	case <-mgrA.Elected():
	case <-time.After(30 * time.Second):
		t.Fatal("first replica not elected within 30s")
	}
	go func() { doneB <- mgrB.Start(ctxB) }()

	waitHealthy(t, b.HealthAddress)
	select {
	case <-mgrB.Elected():
		t.Fatal("standby elected while the leader holds the lease")
	default:
	}

	start := time.Now()
	stopA()
	if err := <-doneA; err != nil {
		t.Fatalf("leader stopped with error: %v", err)
	}
	select {
	case <-mgrB.Elected():
		t.Logf("standby took over %v after the leader stopped", time.Since(start).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("standby not elected within 30s of the leader releasing the lease")
	}
	stopB()
	if err := <-doneB; err != nil {
		t.Fatalf("standby stopped with error: %v", err)
	}
}

// waitHealthy polls the probe endpoints until both answer 200.
func waitHealthy(t *testing.T, addr string) {
	t.Helper()
	for _, path := range []string{"/healthz", "/readyz"} {
		testproc.WaitHTTP(t, fmt.Sprintf("http://%s%s", addr, path), 30*time.Second)
	}
}
