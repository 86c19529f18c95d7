package remediation

import (
	"log/slog"
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestMain(m *testing.M) {
	// Controller logs go to stderr at warn and above, or everything with
	// GPUHEAL_TEST_DEBUG=1 when chasing a failure.
	level := slog.LevelWarn
	if os.Getenv("GPUHEAL_TEST_DEBUG") == "1" {
		level = slog.LevelDebug
	}
	ctrl.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	os.Exit(m.Run())
}
