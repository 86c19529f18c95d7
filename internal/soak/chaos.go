package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gpuheal/gpuheal/internal/provider/kwok"
	"github.com/gpuheal/gpuheal/internal/simfleet/schedule"
)

// chaosMonkey does one disruptive thing at a time, at random times, and
// counts what it did.
type chaosMonkey struct {
	r    *run
	rng  *rand.Rand
	done sync.WaitGroup

	mu     sync.Mutex
	counts map[string]int
	// outage is the total time the API server was paused.
	outage time.Duration
	events []string
}

// What the monkey can do.
const (
	chaosKillController = "controller killed (SIGKILL) and restarted"
	chaosRestartAgents  = "sim fleet (every agent) restarted"
	chaosAPIOutage      = "API server unresponsive"
	chaosProviderFail   = "provider failing"
	chaosProviderThrot  = "provider throttling"
	chaosAuditDiskFull  = "audit disk full"
	chaosGarbageKmsg    = "malformed kernel-log lines"
	chaosBrokenSMI      = "broken nvidia-smi output"
)

var chaosActions = []string{chaosKillController, chaosKillController, chaosRestartAgents, chaosAPIOutage,
	chaosProviderFail, chaosProviderThrot, chaosAuditDiskFull, chaosGarbageKmsg, chaosBrokenSMI}

func newChaos(r *run) *chaosMonkey {
	return &chaosMonkey{r: r, rng: rand.New(rand.NewPCG(uint64(r.opts.Seed), 0xc4a05)), counts: map[string]int{}} //nolint:gosec // a reproducible simulation
}

// run acts every ChaosEvery on average (real time: outages and restarts
// do not scale with speed) until ctx ends.
func (m *chaosMonkey) run(ctx context.Context) {
	defer m.done.Done()
	every := m.r.opts.ChaosEvery
	if every <= 0 {
		every = 40 * time.Second
	}
	for {
		wait := every/2 + time.Duration(m.rng.Int64N(int64(every)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		action := chaosActions[m.rng.IntN(len(chaosActions))]
		if err := m.act(ctx, action); err != nil {
			m.r.log.Error("soak: chaos action failed", "action", action, "err", err)
			continue
		}
		m.mu.Lock()
		m.counts[action]++
		m.mu.Unlock()
	}
}

// start runs the monkey in the background until ctx ends; wait waits for
// it to have undone its last action.
func (m *chaosMonkey) start(ctx context.Context) {
	m.done.Add(1)
	go m.run(ctx)
}

func (m *chaosMonkey) wait() { m.done.Wait() }

func (m *chaosMonkey) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	m.r.log.Info("soak: chaos", "event", msg)
	m.mu.Lock()
	m.events = append(m.events, time.Now().Format(time.TimeOnly)+" "+msg)
	m.mu.Unlock()
}

// hold waits d or until ctx ends; the undo always runs after.
func hold(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (m *chaosMonkey) act(ctx context.Context, action string) error {
	r := m.r
	switch action {
	case chaosKillController:
		i := m.rng.IntN(2)
		r.mu.Lock()
		p := r.controllers[i]
		r.mu.Unlock()
		select {
		case <-p.Done():
			return fmt.Errorf("controller replica %d is down already (its restart is due)", i)
		default:
		}
		r.expect(p)
		p.Kill()
		down := 2*time.Second + time.Duration(m.rng.Int64N(int64(8*time.Second)))
		m.note("killed controller replica %d (pid %d); restarting it in %s", i, p.PID(), down.Round(time.Second))
		hold(ctx, down)
		return r.startController(i)
	case chaosRestartAgents:
		r.mu.Lock()
		p := r.fleet
		r.mu.Unlock()
		r.expect(p)
		if err := p.Stop(20 * time.Second); err != nil {
			return err
		}
		m.note("restarted the sim fleet (pid %d)", p.PID())
		return r.startFleet()
	case chaosAPIOutage:
		d := 10*time.Second + time.Duration(m.rng.Int64N(int64(50*time.Second)))
		m.note("API server unresponsive for %s", d.Round(time.Second))
		if err := r.env.PauseAPIServer(); err != nil {
			return err
		}
		hold(ctx, d)
		m.mu.Lock()
		m.outage += d
		m.mu.Unlock()
		if err := r.env.ResumeAPIServer(); err != nil {
			return err
		}
		// Real kubelets retry their heartbeats and pod status after an
		// outage; kwok drops what timed out (testenv.RestartKwok says
		// why), and a restart gives it the kubelets' behaviour back.
		return r.env.RestartKwok(context.WithoutCancel(ctx))
	case chaosProviderFail, chaosProviderThrot:
		mode := kwok.ChaosFail
		if action == chaosProviderThrot {
			mode = kwok.ChaosThrottle
		}
		d := 15*time.Second + time.Duration(m.rng.Int64N(int64(30*time.Second)))
		m.note("provider %s for %s", mode, d.Round(time.Second))
		if err := os.WriteFile(r.chaosFile(), []byte(mode), 0o644); err != nil {
			return err
		}
		hold(ctx, d)
		return os.Remove(r.chaosFile())
	case chaosAuditDiskFull:
		d := 15*time.Second + time.Duration(m.rng.Int64N(int64(30*time.Second)))
		r.mu.Lock()
		ps := r.controllers
		r.mu.Unlock()
		m.note("audit disk full for %s", d.Round(time.Second))
		for _, p := range ps {
			// Writes past 1 byte fail: every file the process appends to,
			// the SQLite file and its write-ahead log included, is full.
			// A replica that is down (restarting) is skipped.
			_ = setFileSizeLimit(p.PID(), 1)
		}
		hold(ctx, d)
		r.mu.Lock()
		ps = r.controllers // a replica restarted meanwhile starts unlimited
		r.mu.Unlock()
		for _, p := range ps {
			_ = setFileSizeLimit(p.PID(), ^uint64(0))
		}
		return nil
	case chaosGarbageKmsg:
		return m.garbageKmsg()
	case chaosBrokenSMI:
		return m.brokenSMI(ctx)
	}
	return fmt.Errorf("unknown chaos action %q", action)
}

// garbageLines are what a damaged or foreign kernel log can hold: cut
// records, binary noise, fields out of range, a line far too long.
var garbageLines = []string{
	"6,notanumber,123,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>'",
	"3,99999999999999999999999,1,-;NVRM: Xid (PCI:0000:zz:00): 79",
	"4,12,-5,-;NVRM: Xid (PCI:0000:18:00): -1, pid=1, name=x, garbage",
	"\x00\x01\x02\xff\xfe binary noise \x1b[31m",
	";;;;;;",
	"6,13,100,-;NVRM: Xid (PCI:0000:18:00): 79999999999999999999, pid='<unknown>', name=<unknown>",
}

// kernelLogs are the live agents' kernel-log files, named
// <node>.<nonce>.<boot>.kmsg by the sim fleet.
func (m *chaosMonkey) kernelLogs() ([]string, error) {
	return filepath.Glob(filepath.Join(m.r.simFleetDir(), "*.kmsg"))
}

// garbageKmsg appends malformed lines to a few agents' kernel logs.
func (m *chaosMonkey) garbageKmsg() error {
	files, err := m.kernelLogs()
	if err != nil || len(files) == 0 {
		return err
	}
	n := 0
	for range 3 {
		path := files[m.rng.IntN(len(files))]
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			continue // the node rebooted: its log is gone
		}
		for _, l := range garbageLines {
			_, _ = f.WriteString(l + "\n")
			n++
		}
		_, _ = f.WriteString(string(make([]byte, 70000)) + "\n")
		_ = f.Close()
	}
	m.note("appended %d malformed kernel-log lines", n)
	return nil
}

// brokenSMIOutputs are what a damaged nvidia-smi prints: XML cut off
// mid-document, the driver's own complaint, nothing at all (it exits
// non-zero), and noise.
var brokenSMIOutputs = []string{
	"<?xml version=\"1.0\" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM \"nvsmi_device_v12.dtd\">\n<nvidia_smi_log>\n" +
		"\t<driver_version>550.54.15</driver_version>\n\t<attached_gpus>8</attached_gpus>\n" +
		"\t<gpu id=\"00000000:18:00.0\">\n\t\t<product_name>NVIDIA H100 80GB HBM3</product_name>\n\t\t<fb_memory_usage>\n\t\t\t<total>81559 Mi",
	"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. " +
		"Make sure that the latest NVIDIA driver is installed and running.\n",
	"",
	"\x00\x01<nvidia_smi_log>\xff\xfe<gpu id=\"zz\"><<<>>>",
}

// brokenSMI makes a few agents read broken nvidia-smi output for 10–40 s,
// shorter than the minute the default rules wait before an unreadable
// driver counts as a fault: a damaged read alone must not start a repair.
func (m *chaosMonkey) brokenSMI(ctx context.Context) error {
	dir := filepath.Join(m.r.simFleetDir(), schedule.SMIChaosDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files, err := m.kernelLogs()
	if err != nil || len(files) == 0 {
		return err
	}
	var nodes []string
	for range 1 + m.rng.IntN(3) {
		node, _, _ := strings.Cut(filepath.Base(files[m.rng.IntN(len(files))]), ".")
		out := brokenSMIOutputs[m.rng.IntN(len(brokenSMIOutputs))]
		if err := os.WriteFile(filepath.Join(dir, node), []byte(out), 0o644); err != nil {
			return err
		}
		nodes = append(nodes, node)
	}
	d := 10*time.Second + time.Duration(m.rng.Int64N(int64(30*time.Second)))
	m.note("broken nvidia-smi output on %s for %s", strings.Join(nodes, ", "), d.Round(time.Second))
	hold(ctx, d)
	return clearSMIChaos(m.r.simFleetDir())
}

// clearSMIChaos gives every agent its GPUs back.
func clearSMIChaos(fleetDir string) error {
	return os.RemoveAll(filepath.Join(fleetDir, schedule.SMIChaosDir))
}
