// Package analyzer turns GPU snapshots and kernel-log findings into node
// problems and condition statuses, by rules that are data: YAML with CEL
// expressions (github.com/google/cel-go), loaded from the agent's config
// and reloaded when the file changes (Watch). The embedded
// default-rules.yaml is the default set (DefaultRuleSet).
//
// # Config
//
//	expectedDriverVersion: 570.133.20     # optional; CEL expectedDriverVersion
//	xid: {13: {severity: fatal}}          # optional; checked, kept in RuleSet.XIDOverrides
//	rules:                                 # required ("rules: []" for none)
//	- name: double-bit-ecc                 # lower-case, unique; state survives reloads by name
//	  scope: gpu                           # gpu (default) | node | finding
//	  expr: has(gpu.ecc.volatileUncorrected) && gpu.ecc.volatileUncorrected > 0
//	  value: gpu.ecc.volatileUncorrected   # optional CEL; {{.Value}} in templates
//	  for: 0s                              # must hold this long (not for finding rules)
//	  count: {times: 3, window: 10m}       # optional: ≥ times occurrences within window
//	  severity: fatal                      # fatal → condition False; warning → Event only
//	  condition: GPUHealAcceleratorHealthy # or GPUHealKernelHealthy (EKS names taken too)
//	  reason: NvidiaDoubleBitError         # text/template; must render CamelCase
//	  message: "GPU {{.GPU.Index}}: {{.Value}} errors"   # text/template, optional
//	  action: reset-gpu                    # none|restart-app|reset-gpu|reboot|replace
//	  clearAfter: 0s                       # gone this long before it clears
//	  latched: false                       # clears only on reboot (Engine.Reboot) or Reset
//
// Load rejects the whole file on any error and names every bad rule by
// index and name, with the field and CEL's own message; templates are run
// once on sample data so a misspelt field fails Load too. The count field
// is "times", not "n": YAML 1.1 reads a bare n as false.
//
// # Variables
//
// Every scope: node (the NodeSnapshot), findings (this evaluation's
// kernel-log findings) and expectedDriverVersion. gpu scope adds gpu (one
// GPUSnapshot), gpuFindings (findings whose gpu is this GPU's PCI
// address), delta and seconds. node scope adds gpus. finding scope adds
// finding. A rule naming a variable its scope lacks fails to compile.
//
// Keys are the JSON names of package gpu's types (gpu.ecc.volatileUncorrected,
// gpu.pcie.linkGenCurrent, gpu.nvlink[0].crcFlit, node.fabricManager). A nil
// pointer — an unsupported reading — is an absent key, so test it with
// has(gpu.temperatureCelsius) first; reading an absent key is an
// evaluation error (reported in Result.Errors, the rule counts as not
// holding). Every non-pointer field is always present, zero-valued when
// unset (strings "", lists []). Integers are CEL int, fractional readings
// double; cross-type comparisons work (gpu.temperatureCelsius > 90).
// hasBits(x, mask) tests bit masks (clockEventReasons; CEL has no &).
// node.available is false when the backend could not read the GPUs at
// all (Evaluate(nil, …)). A finding is {source, code, xid, gpu, device,
// severity, action, time, message}; device names a fabric adapter or
// switch ("" otherwise).
//
// delta holds, per GPU, current minus previous reading of the counters
// pcieReplayCounter, eccVolatileCorrected, eccVolatileUncorrected,
// eccAggregateCorrected, eccAggregateUncorrected and nvlinkCrcFlit,
// nvlinkCrcData, nvlinkReplay, nvlinkRecovery (summed over links); a key
// is absent when either reading is missing or the counter went down.
// seconds is the time between the two snapshots (0 on the first). A rate
// rule: seconds > 0.0 && has(delta.pcieReplayCounter) &&
// double(delta.pcieReplayCounter) / seconds > 0.2.
//
// # Semantics
//
// State rules (gpu, node) are evaluated every interval. A problem is
// active once expr has held continuously for `for`; it clears once expr
// has been false for clearAfter (0: at once), so a problem that flaps
// within clearAfter keeps its Since and never flips the condition. With
// count, each interval where expr holds is an occurrence, and "holds"
// means at least times occurrences within window.
//
// Finding rules are events: expr runs once per finding (each finding
// must be passed to Evaluate once). A match makes the problem active at
// the finding's time (or now, when it has none) and it clears clearAfter
// (default 10m) after the last match, unless latched. A finding already
// older than clearAfter is therefore not a problem — unless its rule
// latches: a 2-hour-old Xid 79 still means the GPU is gone until reboot.
// Finding problems are keyed by rule, GPU and finding code, so Xid 48 and
// Xid 95 on one GPU are separate problems. A finding rule without action
// takes the finding's own action.
//
// Fatal Xids are matched by two generic rules on the finding's severity
// and action (xid-fatal-reboot, latched; xid-fatal, 30m) with the reason
// NvidiaXID<code>Error, not one rule per catalog code: the detector has
// already applied the catalog, the user's xid overrides, count thresholds
// (ten Xid 13 in an hour) and line-dependent codes (144–150, 154, 94/95),
// which a fixed per-code list would miss or contradict.
//
// A condition is False while any fatal problem for it is active; its
// reason, message and action are the worst problem's (fatal > warning,
// heavier action, older, then rule name). LastTransitionTime changes only
// when the status flips. Warnings never change a condition: they are
// Events, and keeping them out spares a condition patch per warning.
//
// A nil snapshot leaves GPU rules' state as it was (no reading is not a
// healthy one); a GPU absent from a snapshot counts as not holding.
// Engine.Reboot(bootID) clears latched and finding problems when the
// boot id changes; Reset clears every problem.
package analyzer
