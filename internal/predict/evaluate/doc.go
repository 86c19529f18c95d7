// Package evaluate measures a failure predictor on labelled traces the
// way docs/predictor.md defines it, next to the threshold rules of the
// default rule set on the same traces.
//
// Definitions (Definitions holds the numbers):
//
//   - An alarm is raised at a sample whose score is at or above the
//     threshold, unless the GPU's previous alarm was less than the
//     re-raise period (horizon − minimum lead, 20 min by default) ago: a
//     standing high score re-asserts itself every 20 minutes, so every
//     failure's [−30 min, −10 min] window holds one of its alarms.
//   - An alarm is a true positive when its GPU fails within the horizon
//     (30 min) after it. Precision = true alarms / alarms.
//   - A failure is detected when an alarm came at least the minimum lead
//     (10 min) and at most the horizon before it. Recall = detected /
//     failures — all failures, those without any precursor included.
//   - A failure's lead time is the time from its earliest alarm within the
//     horizon to the failure; the median is over failures with any such
//     alarm (so it can be below the minimum lead, and never exceeds the
//     horizon).
//   - PR-AUC is the step-wise area under the event-level precision–recall
//     curve swept over thresholds (average precision).
//
// Samples from a failure until its repair are not evaluated.
package evaluate
