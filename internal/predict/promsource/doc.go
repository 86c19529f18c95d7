// Package promsource turns a fleet's history into labelled traces
// (internal/predict/trace) that the trainer reads: telemetry from the
// user's Prometheus by range queries over the agent's metrics
// (docs/metrics.md), failure labels from the controller's audit log.
//
// # Telemetry
//
// Every query aggregates by the GPU's identity — the node label (the
// chart's ServiceMonitor copies the pod's node into `node`), `uuid` and
// `gpu` — so that two series of one GPU (an agent pod that restarted)
// become one. A GPU slot is one
// (node, UUID) pair, or (node, index) where the UUID is not exported: a
// board moved to another node, or a node that comes back under a new
// name, starts a new slot with fresh feature state, as in the agent.
//
// Each Sample field comes from one metric (queries.go has the PromQL):
//
//	Missing                    gpuheal_gpu_missing == 1
//	Gauges                     gpuheal_gpu_{utilization_percent, memory_used_bytes ÷ 2²⁰,
//	                           temperature_celsius, memory_temperature_celsius,
//	                           power_draw_watts, sm_clock_hertz ÷ 10⁶}
//	ClockEventReasons          gpuheal_gpu_clock_event_reasons
//	RecoveryAction             gpuheal_gpu_recovery_action
//	PCIeLinkGen…WidthMax       gpuheal_gpu_pcie_link_{generation,width}{which}
//	NVLinkUp, NVLinkTotal      sum and count of gpuheal_gpu_nvlink_up over links
//	RemappedRows*, Counters    gpuheal_gpu_remapped_rows{kind}, _pending, _failure
//	Counters (ECC)             gpuheal_gpu_ecc_errors_total{type, scope}
//	Counters (PCIe replay)     gpuheal_gpu_pcie_replay_total
//	Counters (NVLink)          gpuheal_gpu_nvlink_errors_total{type}, summed over links
//	Xids                       increments of gpuheal_gpu_xid_errors_total{xid}
//
// A step where none of a GPU's series has a point is a gap: no sample is
// made (the trace stores a time skip), because an agent that was down or
// a scrape that failed says nothing about the GPU. Only
// gpuheal_gpu_missing == 1 makes a Missing sample, and its other readings
// are dropped, as the agent exports none for a lost GPU (Prometheus'
// lookback can still return its last ones for five minutes). A series
// absent at a step where the GPU has others is an unreported gauge or an
// unread counter. Counters are passed through as read: predict.State
// restarts a counter that goes down. Xid totals count since the agent
// started, so an increment is the difference from the previous step, or
// the new value itself when the total went down (an agent restart), as
// rate() treats counter resets; a code whose series vanished while the
// GPU kept reporting restarts from 0. At a GPU's first step in the range
// the totals are a baseline, not events.
//
// # Labels
//
// A failure is a Detected audit record (an incident opened on a fatal
// node condition). Its time is the condition's transition time, which
// the controller writes into the record's message ("… since <RFC 3339>:
// …"), or the record's time where the message does not say. It falls on
// the GPUs the record names by UUID; a record naming none (a node-wide
// condition such as a driver failure) falls on every GPU of the node that
// reported around that time. The slot is out of service until the
// incident's Recovered record, or its end (Succeeded, Failed, Cancelled),
// or the end of the history where the incident is still open. KernelReady
// incidents and configuration reasons (DefaultIgnoredReasons) are not GPU
// failures and are left out.
package promsource
