package kwok

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Chaos modes, the content of Options.ChaosFile.
const (
	// ChaosFail makes every call fail, as a cloud API outage does.
	ChaosFail = "fail"
	// ChaosThrottle makes every call fail with a throttling error, as a
	// cloud API does when an account exceeds its request rate.
	ChaosThrottle = "throttle"
)

// ErrChaos marks an error the chaos file caused.
var ErrChaos = errors.New("simulated provider failure")

// chaos returns the failure the chaos file asks for, if any. The file is
// read on every call, so a soak test can switch failures on and off while
// the controller runs; no file, or an empty one, means no failure.
func (p *Provider) chaos(op string) error {
	if p.opts.ChaosFile == "" {
		return nil
	}
	data, err := os.ReadFile(p.opts.ChaosFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("kwok %s: reading chaos file: %w", op, err)
	}
	switch mode := strings.TrimSpace(string(data)); mode {
	case "":
		return nil
	case ChaosFail:
		return fmt.Errorf("kwok %s: %w: the simulated cloud API is down", op, ErrChaos)
	case ChaosThrottle:
		return fmt.Errorf("kwok %s: %w: Throttling: Rate exceeded", op, ErrChaos)
	default:
		return fmt.Errorf("kwok %s: chaos file %s: unknown mode %q (want %s or %s)", op, p.opts.ChaosFile, mode, ChaosFail, ChaosThrottle)
	}
}
