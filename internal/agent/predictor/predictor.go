// Package predictor runs the failure model on the agent's snapshots: one
// predict.State per GPU, a risk per GPU for /metrics, the node's highest
// risk and an alarm when a GPU's risk crosses the threshold, and the
// GPUFailurePredicted condition. It never acts on a risk and writes
// nothing to the API server itself: the agent hands what it says to the
// Node writers (internal/agent/nodestatus).
package predictor

import (
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/gpuheal/gpuheal/internal/analyzer"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/predict"
)

// Predictor runs the failure model on every snapshot: one predict.State
// per GPU, a risk per GPU for /metrics, and, through publish, the node's
// highest risk (the gpuheal.io/failure-risk annotation) and a warning
// Event when a GPU's risk crosses the threshold. It never acts on a risk:
// repairs stay with the health rules and the controller's policy.
type Predictor struct {
	pm *Model
	// rearm: a GPU that alarmed alarms again only once its risk fell below
	// this, so a risk hovering at the threshold makes one Event, not one
	// per interval.
	rearm float64
	// keep is how long an Xid report waits for its partner from the other
	// source (predictxid.go); kernel-log Xids older than that when a
	// snapshot comes are history from before the agent started (the ring's
	// backlog, the replayed journal) and do not count.
	keep time.Duration
	log  *slog.Logger
	// Publish, when set, receives after each snapshot with GPUs the node's
	// highest risk and the GPUs that crossed the threshold.
	Publish func(maxRisk float64, alarms []Alarm)
	// Condition, when set, receives the GPUFailurePredicted condition
	// after each snapshot; cond is its state.
	Condition func(analyzer.ConditionStatus)
	cond      predictedCondition

	// gpus and gen are touched by observe only (the collection loop).
	gpus map[string]*gpuPredictor
	gen  uint64

	mu     sync.Mutex
	kernel []kernelXid // kernel-log Xids not yet in a sample
	risks  []gpuRisk   // of the last snapshot
}

// rearmFraction: re-arm 20 % under the threshold.
const rearmFraction = 0.8

// maxPendingKernelXids bounds what waits for the next snapshot while the
// backend fails; the oldest go first.
const maxPendingKernelXids = 1024

type gpuPredictor struct {
	key     string // UUID, or PCI address or index without one
	state   *predict.State
	xids    xidPairs
	alarmed bool
	seen    uint64 // gen of the last snapshot that had the GPU
	// What the condition's message names: the GPU, and its risk when it
	// crossed the threshold.
	index     int
	uuid, bus string
	alarmRisk float64
}

// gpuRisk is one exported risk, with the labels of the per-GPU metrics.
type gpuRisk struct {
	gpu, uuid, bus, model string
	risk                  float64
}

// Alarm is a GPU whose risk crossed the threshold.
type Alarm struct {
	key       string // the GPU's, for its one Event
	index     int
	uuid      string
	risk      float64
	threshold float64
	horizon   time.Duration
}

// New returns a predictor for a collection every interval.
func New(pm *Model, interval time.Duration, log *slog.Logger) *Predictor {
	return &Predictor{pm: pm, rearm: pm.threshold * rearmFraction, keep: xidPairWindow + interval,
		log: log, gpus: map[string]*gpuPredictor{}}
}

// AddFinding takes the kernel log's findings; Xids with a GPU wait for the
// next snapshot. Safe to call from any goroutine.
func (p *Predictor) AddFinding(f finding.Finding) {
	if f.Xid == 0 || f.GPU == "" {
		return
	}
	k := kernelXid{code: uint32(min(f.Xid, 1<<32-1)), at: f.Time, bus: f.GPU}
	p.mu.Lock()
	if len(p.kernel) == maxPendingKernelXids {
		p.kernel = append(p.kernel[:0], p.kernel[1:]...)
	}
	p.kernel = append(p.kernel, k)
	p.mu.Unlock()
}

// Observe scores every GPU of snap. It runs before the exporter renders
// snap, so the risks on /metrics belong to the same snapshot. A nil snap
// (the backend failed) drops the risks, as the exporter drops the GPU
// series, and keeps the states.
func (p *Predictor) Observe(snap *gpu.NodeSnapshot) {
	p.mu.Lock()
	kernel := p.kernel
	p.kernel = nil
	if snap == nil {
		p.risks = nil
	}
	p.mu.Unlock()
	if snap == nil {
		return
	}
	kernel = p.recent(snap.Time, kernel)

	p.gen++
	risks := make([]gpuRisk, 0, len(snap.GPUs))
	var alarms []Alarm
	maxRisk := 0.0
	for i := range snap.GPUs {
		g := &snap.GPUs[i]
		gp := p.gpuFor(g)
		s := predict.SampleFromSnapshot(snap.Time, g)
		s.Xids = gp.xids.merge(snap.Time, p.keep, g.XidEvents, kernel, g.PCIBusID, s.Xids[:0])
		risk := p.pm.model.Score(gp.state.Update(&s))
		switch {
		case !gp.alarmed && risk >= p.pm.threshold:
			gp.alarmed, gp.alarmRisk = true, risk
			gp.index, gp.uuid, gp.bus = g.Index, g.UUID, g.PCIBusID
			a := Alarm{key: gp.key, index: g.Index, uuid: g.UUID, risk: risk, threshold: p.pm.threshold,
				horizon: time.Duration(p.pm.model.File().HorizonSeconds) * time.Second}
			alarms = append(alarms, a)
			p.log.Warn("GPU failure predicted", "gpu", g.Index, "uuid", g.UUID, "risk", risk, "threshold", p.pm.threshold)
		case gp.alarmed && risk < p.rearm:
			gp.alarmed = false
		}
		maxRisk = max(maxRisk, risk)
		risks = append(risks, gpuRisk{gpu: strconv.Itoa(g.Index), uuid: labelValue(g.UUID), bus: labelValue(g.PCIBusID),
			model: labelValue(g.Name), risk: risk})
	}
	// A GPU gone from the snapshot is forgotten: if it comes back it starts
	// a new history, as a replaced board must.
	for k, gp := range p.gpus {
		if gp.seen != p.gen {
			delete(p.gpus, k)
		}
	}
	if p.Condition != nil {
		var alarmed []*gpuPredictor
		for _, gp := range p.gpus {
			if gp.alarmed {
				alarmed = append(alarmed, gp)
			}
		}
		p.Condition(p.cond.next(snap.Time, alarmed, p.pm.threshold, time.Duration(p.pm.model.File().HorizonSeconds)*time.Second))
	}
	p.mu.Lock()
	p.risks = risks
	p.mu.Unlock()
	if p.Publish != nil && len(snap.GPUs) > 0 {
		p.Publish(maxRisk, alarms)
	}
}

// recent drops kernel-log Xids too old to be news at now.
func (p *Predictor) recent(now time.Time, kernel []kernelXid) []kernelXid {
	cut := now.Add(-p.keep)
	n := 0
	for _, k := range kernel {
		if k.at.IsZero() {
			k.at = now
		}
		if !k.at.Before(cut) {
			kernel[n] = k
			n++
		}
	}
	return kernel[:n]
}

// gpuFor returns the GPU's predictor, a new one for a GPU not seen in the
// last snapshot. GPUs are told apart by UUID (a replaced board gets a new
// history), or by PCI address or index when the backend could not read it.
func (p *Predictor) gpuFor(g *gpu.GPUSnapshot) *gpuPredictor {
	key := g.UUID
	switch {
	case key != "":
	case g.PCIBusID != "":
		key = "pci:" + g.PCIBusID
	default:
		key = "index:" + strconv.Itoa(g.Index)
	}
	gp := p.gpus[key]
	if gp == nil {
		gp = &gpuPredictor{key: key, state: predict.NewState()}
		p.gpus[key] = gp
	}
	gp.seen = p.gen
	return gp
}

// lastRisks returns the risks of the last snapshot; callers must not
// change them.
func (p *Predictor) lastRisks() []gpuRisk {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.risks
}

// Key names the GPU, for its one warning Event.
func (a Alarm) Key() string { return a.key }

// Message is the warning Event's text.
func (a Alarm) Message() string {
	return fmt.Sprintf("GPU %d (%s): predicted failure risk %.3f is at or above the threshold %.3f; "+
		"the failure model expects it may fail within %d minutes. Warning only: gpuheal starts no repair for a prediction.",
		a.index, a.uuid, a.risk, a.threshold, int(a.horizon.Minutes()))
}
