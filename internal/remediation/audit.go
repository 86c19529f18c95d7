package remediation

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/audit"
)

// auditor writes the incident's steps to the audit sink. Keys derive from
// the incident and the step, so a step repeated after a crash or a failed
// status write is recorded once. A failing sink never stops remediation:
// the controller hands it a buffered sink that keeps and retries records,
// and any error here is logged and counted by the sink, not returned.
type auditor struct {
	sink  audit.Sink
	clock clock.PassiveClock // nil: the real one
	// observe, when set, sees every record written (the score publisher).
	observe func(audit.Record)
}

func (a auditor) write(ctx context.Context, recs ...audit.Record) {
	if a.observe != nil {
		for _, r := range recs {
			a.observe(r)
		}
	}
	if a.sink == nil {
		return
	}
	if err := a.sink.Write(ctx, recs...); err != nil {
		log.FromContext(ctx).Error(err, "writing audit records", "count", len(recs), "first", recs[0].Key)
	}
}

func (a auditor) now() time.Time {
	if a.clock == nil {
		return time.Now()
	}
	return a.clock.Now()
}

// record fills what every record of an incident carries.
func (a auditor) record(in *incident, kind audit.Kind, step string, n int) audit.Record {
	nr := in.nr
	return audit.Record{
		Key:      audit.Key(nr.Name, step, n),
		Time:     a.now(),
		Incident: nr.Name,
		Node:     nr.Spec.NodeName,
		Policy:   nr.Spec.PolicyName,
		Kind:     kind,
		Phase:    string(nr.Status.Phase),
		Action:   string(nr.Status.Action),
		Reason:   nr.Status.Reason,
		Message:  nr.Status.Message,
		GPUs:     gpuUUIDs(nr.Spec.Trigger.Message),
		Severity: audit.SeverityInfo,
		DryRun:   nr.Status.DryRun,
		Machine:  machineOf(in.node),
	}
}

// phaseKinds are the phases that are steps of their own in the audit log;
// the others are recorded by the step that caused them (a provider request,
// an escalation).
var phaseKinds = map[v1alpha1.Phase]audit.Kind{
	v1alpha1.PhaseCordoned:  audit.Cordoned,
	v1alpha1.PhaseDrained:   audit.Drained,
	v1alpha1.PhaseSucceeded: audit.Succeeded,
	v1alpha1.PhaseFailed:    audit.Failed,
	v1alpha1.PhaseCancelled: audit.Cancelled,
}

// phaseEntered records a phase change just written to the incident.
func (a auditor) phaseEntered(ctx context.Context, in *incident, phase v1alpha1.Phase, prevSince time.Time) {
	kind, ok := phaseKinds[phase]
	if !ok {
		return
	}
	rec := a.record(in, kind, string(kind), len(in.nr.Status.Phases))
	switch {
	case phase.Terminal():
		rec.Duration = a.now().Sub(in.nr.Spec.Trigger.Since.Time)
		if phase == v1alpha1.PhaseFailed {
			rec.Severity = audit.SeverityCritical
		}
	case phase == v1alpha1.PhaseDrained:
		rec.Duration = a.now().Sub(enteredAt(in.nr, v1alpha1.PhaseDraining))
	case !prevSince.IsZero():
		rec.Duration = a.now().Sub(prevSince)
	}
	a.write(ctx, rec)
}

// detectedRecord is the first record of an incident: the condition that
// opened it.
func detectedRecord(spec v1alpha1.NodeRemediationSpec, name string, dryRun bool, at time.Time) audit.Record {
	t := spec.Trigger
	return audit.Record{
		Key: audit.Key(name, string(audit.Detected), 0), Time: at, Incident: name, Node: spec.NodeName,
		Policy: spec.PolicyName, Kind: audit.Detected, Reason: t.Reason, Severity: audit.SeverityCritical,
		Message: fmt.Sprintf("%s=%s since %s: %s", t.Type, t.Status, t.Since.UTC().Format(time.RFC3339), t.Message),
		GPUs:    gpuUUIDs(t.Message), DryRun: dryRun,
	}
}

// actionRequested records a provider request that was accepted.
func (a auditor) actionRequested(in *incident, req v1alpha1.ProviderRequest) audit.Record {
	rec := a.record(in, audit.ActionRequested, string(audit.ActionRequested), int(req.Attempt))
	rec.Time = req.Time.Time
	rec.Provider, rec.RequestID, rec.Action, rec.Reason = req.Provider, req.RequestID, string(req.Action), string(req.Action)
	rec.Message = fmt.Sprintf("%s requested from %s", req.Action, req.Provider)
	return rec
}

var gpuUUID = regexp.MustCompile(`GPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}`)

// gpuUUIDs picks the GPU UUIDs our agent names in a condition message.
func gpuUUIDs(msg string) []string {
	return gpuUUID.FindAllString(msg, 8)
}
