// Package fleetsim simulates the telemetry of a GPU fleet over days, with
// failures and the signals that do — and do not — come before them, and
// writes it as labelled traces (internal/predict/trace) for training and
// evaluating the failure predictor.
//
// Rates and the failure mix come from the published figures in
// the Llama 3 paper, "The Llama 3 Herd of Models" (Meta, 2024), Table 5 (see preset.go). Everything else —
// how often a precursor shows, how long before, how strong, and how often
// healthy GPUs show the same signals and never fail — is an assumption,
// stated in preset.go and docs/predictor.md, and drawn at random per
// failure and per episode so that precursors and benign noise overlap:
//
//   - each failure class has a probability of coming with no precursor at
//     all (the predictor cannot know those);
//   - precursors are bursty (on/off), grow at a random pace from a random
//     start to a random end level, and begin a random (log-normal) time
//     before the failure — sometimes too late to help;
//   - healthy GPUs show the same kinds of signal: bursts of corrected ECC
//     errors, PCIe replays and NVLink CRC errors at overlapping rates,
//     isolated Xid 119s, benign row remaps, thermal excursions, chronic
//     low-level error counts, and application Xid 13/31/43 crash loops.
//
// It is not the sim fleet (internal/simfleet, gpuheal-agent --sim-fleet):
// that one runs live agents against an API server for the demo and the
// soak, each GPU failing at once with one injectable fault, to exercise
// detection and remediation. fleetsim runs offline and models what the
// sim fleet leaves out, the weeks of signals before a failure, so the two
// share the Llama 3 counts but no code.
//
// Output is a pure function of Options: each GPU slot draws from its own
// random stream seeded by (seed, slot), so the bytes do not depend on the
// number of workers.
package fleetsim
