package kwok

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuheal/gpuheal/internal/testenv"
)

// The chaos file switches failures on and off between calls, as the soak
// test does to a running controller.
func TestChaosFileFailsCalls(t *testing.T) {
	env := testenv.ForTest(t, testenv.Options{})
	ctx := testCtx(t)
	node := testenv.GPUNode("chaos-0")
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	chaos := filepath.Join(t.TempDir(), "chaos")
	p := New(env.Client, Options{ChaosFile: chaos})
	for mode, want := range map[string]string{ChaosFail: "cloud API is down", ChaosThrottle: "Throttling"} {
		if err := os.WriteFile(chaos, []byte(mode+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Reboot(ctx, node, "t1"); !errors.Is(err, ErrChaos) || !strings.Contains(err.Error(), want) {
			t.Errorf("mode %s: Reboot error %v; want ErrChaos saying %q", mode, err, want)
		}
		if _, err := p.Replace(ctx, node, "t1"); !errors.Is(err, ErrChaos) {
			t.Errorf("mode %s: Replace error %v; want ErrChaos", mode, err)
		}
	}
	if err := os.WriteFile(chaos, []byte("meteor"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Status(ctx, node); err == nil || !strings.Contains(err.Error(), `unknown mode "meteor"`) {
		t.Errorf("a bad mode gave %v", err)
	}
	if err := os.Remove(chaos); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Reboot(ctx, node, "t1"); err != nil {
		t.Errorf("without a chaos file Reboot failed: %v", err)
	}
}
