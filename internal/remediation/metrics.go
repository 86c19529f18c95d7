package remediation

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The controller's metrics, served by controller-runtime on :8080/metrics.
var (
	remediationsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gpuheal_remediations_total",
		Help: "Incidents that ended, by action taken (None when none was) and result (Succeeded, Failed, Cancelled).",
	}, []string{"action", "result"})
	phaseDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gpuheal_remediation_phase_duration_seconds",
		Help:    "Time incidents spent in each phase.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
	}, []string{"phase"})
	unhealthyNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gpuheal_unhealthy_nodes",
		Help: "Nodes of each policy that show one of its unhealthy conditions now or that gpuheal holds out of service (cordoned by an incident).",
	}, []string{"policy"})
	breakerOpen = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gpuheal_breaker_open",
		Help: "1 while a policy's circuit breaker holds new remediations because more than maxUnhealthy nodes are unhealthy or held out of service.",
	}, []string{"policy"})
	causeBreakerOpen = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gpuheal_cause_breaker_open",
		Help: "1 while a policy's breaker for one cause (the condition and what the nodes run on) holds that cause's incidents for a person; the series goes when the breaker is closed.",
	}, []string{"policy", "cause", "condition", "driver_version", "kernel_version", "image", "instance_type", "zone"})
	inFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gpuheal_remediations_in_flight",
		Help: "Incidents of each policy past Pending and not over.",
	}, []string{"policy"})
	timeToRecover = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gpuheal_time_to_recover_seconds",
		Help:    "From the node condition turning unhealthy to the rebooted or replacement node being Ready and healthy.",
		Buckets: []float64{30, 60, 90, 120, 180, 300, 600, 900, 1800, 3600, 7200},
	}, []string{"action"})
	providerReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gpuheal_provider_ready",
		Help: "1 while a policy's last provider preflight passed, 0 while it failed (its incidents wait in Pending); absent before the first.",
	}, []string{"policy"})
	validationChecks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gpuheal_validation_checks_total",
		Help: "Health gate checks judged, by kind (Agent, DCGM, NCCL, NVBandwidth) and outcome (Passed, Failed, Error; Skipped: an idle check that gave way to a workload).",
	}, []string{"kind", "outcome"})
	gateRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gpuheal_validation_runs_total",
		Help: "Join and idle check runs ended, by purpose (join, idle) and outcome (Passed, Failed, Error, Skipped).",
	}, []string{"purpose", "outcome"})
	validationCheckDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gpuheal_validation_check_duration_seconds",
		Help:    "Time health gate checks took, from their start to their outcome, by kind.",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200},
	}, []string{"kind"})
	gpuResets = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gpuheal_gpu_resets_total",
		Help: "Single-GPU resets answered, by outcome (Succeeded, Failed) and reason (None, or why it failed: GPUInUse, ResetTimeout for no answer in time, …; Other for a reason this version does not know).",
	}, []string{"outcome", "reason"})
	gpuResetDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gpuheal_gpu_reset_duration_seconds",
		Help:    "From the controller's reset request to the agent's answer (or the timeout), by outcome.",
		Buckets: resetDurationBuckets,
	}, []string{"outcome"})
	nodePatchConflicts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gpuheal_node_patch_conflicts_total",
		Help: "Cordon, uncordon and health tier taint patches refused because the node's taints or cordon changed since it was read (each is read again and retried).",
	})
)

func init() {
	metrics.Registry.MustRegister(remediationsTotal, phaseDuration, unhealthyNodes, breakerOpen, causeBreakerOpen, inFlight, timeToRecover, nodeHealthScore, nodePatchConflicts, providerReady, validationChecks, validationCheckDuration, gateRuns, gpuResets, gpuResetDuration)
}
