package gpureset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/gpu"
	"github.com/gpuheal/gpuheal/internal/poll"
)

// Device is the node's GPU tool: nvidia-smi on a real node (SMIDevice),
// the simulated node in the sim backend. Bus IDs are normalized
// (gpu.NormalizePCIBusID: 0000:1b:00.0).
type Device interface {
	// GPUProcesses lists the PIDs of compute and graphics processes on
	// the GPU at busID.
	GPUProcesses(ctx context.Context, busID string) ([]int, error)
	// SetPersistenceMode turns persistence mode on or off for the GPU.
	SetPersistenceMode(ctx context.Context, busID string, on bool) error
	// ResetGPU resets the GPU and returns what the tool printed; failed
	// is true when it exited non-zero. err is a tool that could not run.
	ResetGPU(ctx context.Context, busID string) (out string, failed bool, err error)
}

// Step names, in the order they run.
const (
	StepFabric       = "fabric-manager"
	StepRelease      = "release-nvml"
	StepProcesses    = "processes"
	StepPersistence  = "persistence-off"
	StepReset        = "reset"
	StepRestore      = "persistence-restore"
	StepReopen       = "reopen-nvml"
	StepVerify       = "verify"
	defaultProcWait  = 30 * time.Second
	defaultResetTime = 60 * time.Second
	defaultVerify    = 30 * time.Second
)

// Procedure resets GPUs on one node. Device and Snapshot are required.
type Procedure struct {
	Device Device
	// Release stops gpuheal's own NVML use of the GPUs (an open NVML
	// handle counts as a client and the reset is refused) and returns
	// the function that reopens it; nil when the backend holds nothing
	// (the sim). buses are the GPUs about to be reset.
	Release func(buses []string) (reopen func())
	// Snapshot reads the node's GPUs afresh, for the verification.
	Snapshot func(ctx context.Context) (*gpu.NodeSnapshot, error)
	Clock    clock.PassiveClock
	// ProcessWait bounds the wait for the GPU's processes (an evicted
	// pod's) to exit; ResetTimeout the reset tool; VerifyWait the wait
	// for the GPU to answer healthy after it. Zero: 30s, 60s, 30s.
	ProcessWait, ResetTimeout, VerifyWait time.Duration
	// PollInterval is how often processes and the verification are
	// checked again (0: poll.Interval).
	PollInterval time.Duration
}

// Result is the outcome of one reset: Succeeded, or Failed with a reason.
type Result struct {
	Outcome string
	Reason  string
	Message string
	Steps   []v1alpha1.GPUResetStep
	// Buses are the bus IDs of the requested GPUs as resolved against the
	// snapshot before the reset (nil when they could not be): the GPUs
	// whose old findings a successful reset lets the agent forget.
	Buses []string
}

// failure ends the procedure with a reason.
type failure struct{ reason, msg string }

func (f *failure) Error() string { return f.reason + ": " + f.msg }

func fail(reason, format string, a ...any) *failure {
	return &failure{reason: reason, msg: fmt.Sprintf(format, a...)}
}

// Run resets the GPUs named by gpus (index, UUID and bus ID, as the
// request gave them and the agent checked against before, the snapshot
// the request was judged on). It never returns without a Result: a
// failure names its reason and the step it stopped at.
func (p *Procedure) Run(ctx context.Context, gpus []v1alpha1.GPURef, before *gpu.NodeSnapshot) Result {
	r := &run{p: p, clk: p.Clock}
	if r.clk == nil {
		r.clk = clock.RealClock{}
	}
	err := r.all(ctx, gpus, before)
	res := Result{Outcome: v1alpha1.GPUResetSucceeded, Steps: r.steps, Buses: r.buses}
	if err != nil {
		res.Outcome = v1alpha1.GPUResetFailed
		var f *failure
		if errors.As(err, &f) {
			res.Reason, res.Message = f.reason, f.msg
		} else {
			res.Reason, res.Message = v1alpha1.ResetReasonError, err.Error()
		}
	} else {
		res.Message = fmt.Sprintf("reset %s and verified", describe(gpus))
	}
	return res
}

type run struct {
	p     *Procedure
	clk   clock.PassiveClock
	steps []v1alpha1.GPUResetStep
	buses []string // the targets' bus IDs, once all are resolved
}

func (r *run) step(name string, ok bool, format string, a ...any) {
	r.steps = append(r.steps, v1alpha1.GPUResetStep{
		Name: name, Time: metav1.NewMicroTime(r.clk.Now()), OK: ok, Message: clean(fmt.Sprintf(format, a...)),
	})
}

// stepErr records a failed step and returns err.
func (r *run) stepErr(name string, err *failure) error {
	r.step(name, false, "%s", err.msg)
	return err
}

func (r *run) all(ctx context.Context, refs []v1alpha1.GPURef, before *gpu.NodeSnapshot) error {
	if len(refs) == 0 {
		return fail(v1alpha1.ResetReasonRefused, "the request names no GPU")
	}
	targets := make([]*gpu.GPUSnapshot, len(refs))
	for i, ref := range refs {
		g, err := find(before, ref)
		if err != nil {
			return r.stepErr(StepFabric, err)
		}
		targets[i] = g
	}
	for _, g := range targets {
		r.buses = append(r.buses, g.PCIBusID)
	}
	for _, g := range targets {
		ok, why := FabricAllows(before, g)
		if !ok {
			return r.stepErr(StepFabric, fail(v1alpha1.ResetReasonNotSupported, "%s", why))
		}
		r.step(StepFabric, true, "GPU %s: %s", g.PCIBusID, why)
	}

	reopened := true
	reopen := func() {}
	if r.p.Release != nil {
		reopen, reopened = r.p.Release(r.buses), false
		r.step(StepRelease, true, "gpuheal's NVML use of the node's GPUs stopped")
	}
	doReopen := func() {
		if !reopened {
			reopened = true
			reopen()
			r.step(StepReopen, true, "gpuheal's NVML use resumed")
		}
	}
	defer doReopen()

	for _, g := range targets {
		if err := r.waitIdle(ctx, g.PCIBusID); err != nil {
			return err
		}
	}
	var restore []string
	defer func() { r.restore(restore) }()
	for _, g := range targets {
		if g.PersistenceMode == nil || !*g.PersistenceMode {
			continue
		}
		// nvidia-persistenced's handle counts as a client: the reset is
		// refused "in use by another client" while persistence mode is on.
		if err := r.p.Device.SetPersistenceMode(ctx, g.PCIBusID, false); err != nil {
			return r.stepErr(StepPersistence, fail(v1alpha1.ResetReasonError, "GPU %s: turning persistence mode off: %v", g.PCIBusID, err))
		}
		restore = append(restore, g.PCIBusID)
		r.step(StepPersistence, true, "GPU %s: persistence mode off for the reset", g.PCIBusID)
	}
	for _, g := range targets {
		if err := r.reset(ctx, g.PCIBusID); err != nil {
			return err
		}
	}
	r.restore(restore)
	restore = nil
	doReopen()
	return r.verify(ctx, targets)
}

// find is the GPU of before that ref names, by index, with the UUID
// and bus ID checked when the request gave them: a request for a GPU
// that is not (or no longer) this one is refused.
func find(before *gpu.NodeSnapshot, ref v1alpha1.GPURef) (*gpu.GPUSnapshot, *failure) {
	if before == nil {
		return nil, fail(v1alpha1.ResetReasonNotFound, "no reading of the node's GPUs to check GPU %d against", ref.Index)
	}
	for i := range before.GPUs {
		g := &before.GPUs[i]
		if g.Index != int(ref.Index) {
			continue
		}
		if ref.UUID != "" && ref.UUID != g.UUID {
			return nil, fail(v1alpha1.ResetReasonRefused, "GPU %d is %s, not %s as requested", ref.Index, g.UUID, ref.UUID)
		}
		if ref.BusID != "" {
			want, err := gpu.NormalizePCIBusID(ref.BusID)
			if err != nil || want != g.PCIBusID {
				return nil, fail(v1alpha1.ResetReasonRefused, "GPU %d is at %s, not %q as requested", ref.Index, g.PCIBusID, ref.BusID)
			}
		}
		return g, nil
	}
	return nil, fail(v1alpha1.ResetReasonNotFound, "no GPU %d on this node", ref.Index)
}

func (r *run) waitIdle(ctx context.Context, bus string) error {
	var last []int
	wait := orDefault(r.p.ProcessWait, defaultProcWait)
	err := r.poll(ctx, wait, "GPU "+bus+" without processes", func(ctx context.Context) (bool, error) {
		pids, err := r.p.Device.GPUProcesses(ctx, bus)
		if err != nil {
			return false, err
		}
		last = pids
		return len(pids) == 0, nil
	})
	switch {
	case err == nil:
		r.step(StepProcesses, true, "GPU %s: no process on it", bus)
		return nil
	case len(last) > 0:
		return r.stepErr(StepProcesses, fail(v1alpha1.ResetReasonInUse, "GPU %s: processes %s still on it after %s", bus, pidList(last), wait))
	}
	return r.stepErr(StepProcesses, fail(v1alpha1.ResetReasonError, "GPU %s: listing its processes: %v", bus, err))
}

func (r *run) reset(ctx context.Context, bus string) error {
	limit := orDefault(r.p.ResetTimeout, defaultResetTime)
	rctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	out, failed, err := r.p.Device.ResetGPU(rctx, bus)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (err != nil && rctx.Err() != nil && ctx.Err() == nil):
		return r.stepErr(StepReset, fail(v1alpha1.ResetReasonTimeout, "GPU %s: the reset did not finish within %s", bus, limit))
	case err != nil:
		return r.stepErr(StepReset, fail(v1alpha1.ResetReasonError, "GPU %s: running the reset: %v", bus, err))
	}
	if reason, msg := ParseOutput(out, failed); reason != "" {
		return r.stepErr(StepReset, fail(reason, "GPU %s: %s", bus, msg))
	}
	r.step(StepReset, true, "%s", firstLine(out))
	return nil
}

// restore turns persistence mode back on where the procedure took it off,
// on success and failure alike.
func (r *run) restore(buses []string) {
	for _, bus := range buses {
		// Not the request's context: it may have ended, and a GPU left
		// without persistence mode reinitializes on every client.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := r.p.Device.SetPersistenceMode(ctx, bus, true)
		cancel()
		if err != nil {
			r.step(StepRestore, false, "GPU %s: turning persistence mode back on: %v", bus, err)
			continue
		}
		r.step(StepRestore, true, "GPU %s: persistence mode on again", bus)
	}
}

// verify waits for a fresh reading in which every GPU answers as itself
// and its fault is gone.
func (r *run) verify(ctx context.Context, targets []*gpu.GPUSnapshot) error {
	var last *failure
	wait := orDefault(r.p.VerifyWait, defaultVerify)
	err := r.poll(ctx, wait, "the reset GPUs healthy", func(ctx context.Context) (bool, error) {
		snap, err := r.p.Snapshot(ctx)
		if err != nil {
			last = fail(v1alpha1.ResetReasonError, "reading the GPUs after the reset: %v", err)
			return false, err
		}
		for _, t := range targets {
			if f := check(snap, t); f != nil {
				last = f
				return false, nil
			}
		}
		last = nil
		return true, nil
	})
	if err == nil {
		r.step(StepVerify, true, "%s answer with their UUIDs, no volatile uncorrected ECC error, no reset required, no pending remap", describeSnaps(targets))
		return nil
	}
	if last == nil {
		last = fail(v1alpha1.ResetReasonFaultRemains, "verification did not finish: %v", err)
	}
	return r.stepErr(StepVerify, last)
}

// check is what is still wrong with GPU t in snap, nil when nothing.
func check(snap *gpu.NodeSnapshot, t *gpu.GPUSnapshot) *failure {
	var g *gpu.GPUSnapshot
	for i := range snap.GPUs {
		if snap.GPUs[i].PCIBusID == t.PCIBusID {
			g = &snap.GPUs[i]
		}
	}
	switch {
	case g == nil:
		return fail(v1alpha1.ResetReasonNotFound, "GPU %s did not come back after the reset", t.PCIBusID)
	case g.Missing:
		return fail(v1alpha1.ResetReasonNotFound, "GPU %s does not answer after the reset", t.PCIBusID)
	case t.UUID != "" && g.UUID != t.UUID:
		return fail(v1alpha1.ResetReasonNotFound, "GPU %s answers as %s, not %s", t.PCIBusID, g.UUID, t.UUID)
	}
	var left []string
	if n := g.ECC.VolatileUncorrected; n != nil && *n > 0 {
		left = append(left, strconv.FormatUint(*n, 10)+" volatile uncorrected ECC errors")
	}
	if g.ResetRequired != nil && *g.ResetRequired {
		left = append(left, "reset still required")
	}
	if g.RemappedRows != nil && g.RemappedRows.Pending {
		left = append(left, "row remap still pending")
	}
	if g.RemappedRows != nil && g.RemappedRows.Failure {
		left = append(left, "row remapping failed")
	}
	if g.RetiredPages != nil && g.RetiredPages.Pending {
		left = append(left, "page retirement still pending")
	}
	if len(left) > 0 {
		return fail(v1alpha1.ResetReasonFaultRemains, "GPU %s after the reset: %s", t.PCIBusID, strings.Join(left, ", "))
	}
	if snap.NVSwitch && g.FabricState != "" && g.FabricState != "Completed" {
		return fail(v1alpha1.ResetReasonFabric, "GPU %s: fabric state %s (status %s), not Completed", t.PCIBusID, g.FabricState, g.FabricStatus)
	}
	return nil
}

func (r *run) poll(ctx context.Context, wait time.Duration, what string, cond poll.Cond) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return poll.Until(ctx, what, r.p.PollInterval, cond)
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func pidList(pids []int) string {
	s := slices.Clone(pids)
	slices.Sort(s)
	out := make([]string, 0, min(len(s), 8))
	for i, p := range s {
		if i == 8 {
			out = append(out, fmt.Sprintf("and %d more", len(s)-8))
			break
		}
		out = append(out, strconv.Itoa(p))
	}
	return strings.Join(out, ", ")
}

func describe(refs []v1alpha1.GPURef) string {
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = "GPU " + strconv.Itoa(int(r.Index))
	}
	return strings.Join(parts, ", ")
}

func describeSnaps(gs []*gpu.GPUSnapshot) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = "GPU " + g.PCIBusID
	}
	return strings.Join(parts, ", ")
}
