// Package simfleet runs the sim fleet (gpuheal-agent --sim-fleet): one
// real agent per GPU node of a cluster, all in one process, each on its
// own simulated GPUs and kernel log, with faults drawn from the published
// failure mix or read from a schedule (internal/simfleet/schedule), for
// the demo and the soak against a live API server and controller.
//
// It is not internal/fleetsim, and models a different thing: fleetsim
// writes offline telemetry histories of many GPUs over days, with the
// precursors and benign noise that come before failures, to train and
// evaluate the failure predictor; the sim fleet plays the moment of
// failure live, through the agent's real collection, rules and Node
// writers, to exercise detection and remediation. Both start from the
// Llama 3 paper's failure counts, but fleetsim splits them into
// per-GPU precursor models while the sim fleet maps each class to one
// injectable fault, so they share no code.
package simfleet
