// Package nodestatus writes what the agent says about its own Node: the
// conditions (with the carried lastTransitionTime that keeps a restarted
// agent from opening a second incident), the gpu-healthy-count label, the
// active-warnings, recommended-actions, gpu-faults, agent-checks and
// failure-risk annotations, the health gate's join taint, and aggregated
// warning Events. Each writer keeps the newest desired state and retries
// with backoff while the API server is away, so the agent's evaluation
// never waits on it. What to write comes from the analyzer and the
// predictor; this package only knows how, and in what order.
package nodestatus
