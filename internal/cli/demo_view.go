package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/fleetview"
)

// demoView prints what happens in the fleet as it happens: detections,
// each incident's phases, the breaker, and a summary now and then.
type demoView struct {
	c     client.Client
	out   io.Writer
	start time.Time
	color bool

	printed   map[string]int    // incident → phases printed
	checks    map[string]int    // incident → finished checks printed
	resets    map[string]int    // incident → GPU reset lines printed (drain scope, outcome)
	problems  map[string]string // node → the condition reason last printed
	recovered []time.Duration
	failed    int
	breaker   map[string]bool
	summaryAt time.Time
	// lemon plants the repeat offender's faults (nil: none); lemons are
	// the incidents whose lemon line is printed.
	lemon  *lemonPlanter
	lemons map[string]bool
}

const demoSummaryEvery = 15 * time.Second

func newDemoView(c client.Client, out io.Writer, start time.Time) *demoView {
	return &demoView{c: c, out: out, start: start, color: isTerminal(out),
		printed: map[string]int{}, checks: map[string]int{}, resets: map[string]int{}, problems: map[string]string{}, breaker: map[string]bool{}, lemons: map[string]bool{}, summaryAt: start}
}

// run polls until ctx ends, or returns an error when a demo process died.
func (v *demoView) run(ctx context.Context, exited <-chan string) error {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			v.summary(time.Now(), nil)
			return nil
		case why := <-exited:
			return errors.New(why)
		case now := <-tick.C:
			if err := v.poll(ctx, now); err != nil && ctx.Err() == nil {
				v.line(now, "", "", "reading the cluster: "+err.Error())
			}
		}
	}
}

func (v *demoView) poll(ctx context.Context, now time.Time) error {
	var nodes corev1.NodeList
	if err := v.c.List(ctx, &nodes, client.MatchingLabels{gpuhealv1.LabelNvidiaGPUPresent: "true"}); err != nil {
		return err
	}
	var rems gpuhealv1.NodeRemediationList
	if err := v.c.List(ctx, &rems); err != nil {
		return err
	}
	var policies gpuhealv1.RemediationPolicyList
	if err := v.c.List(ctx, &policies); err != nil {
		return err
	}
	var events corev1.EventList
	if err := v.c.List(ctx, &events, client.MatchingFields{"reason": gpuhealv1.EventReasonLemon}); err != nil {
		return err
	}
	fleet := fleetview.Build(nodes.Items, rems.Items)
	v.detections(now, fleet.Nodes)
	v.incidents(rems.Items)
	v.lemonLines(now, rems.Items, events.Items)
	if v.lemon != nil {
		if what := v.lemon.step(ctx, now, fleet.Nodes); what != "" {
			v.line(now, "\x1b[33m", v.lemon.node, what)
		}
	}
	for _, p := range policies.Items {
		if open := p.Status.BreakerOpen; open != v.breaker[p.Name] {
			v.breaker[p.Name] = open
			state := "closed: repairs resume"
			if open {
				state = "OPEN: too many unhealthy nodes, no new repairs"
			}
			v.line(now, "\x1b[35m", "policy/"+p.Name, "circuit breaker "+state)
		}
	}
	if now.Sub(v.summaryAt) >= demoSummaryEvery {
		v.summaryAt = now
		v.summary(now, &fleet.Summary)
	}
	return nil
}

// detections prints a node's GPU, kernel or network condition turning False (what
// the agent found) and clears it when the node is healthy again.
func (v *demoView) detections(now time.Time, rows []fleetview.Row) {
	for _, r := range rows {
		problem, message := "", ""
		for _, c := range r.Conditions {
			if gpuhealv1.IsAgentHealthCondition(c.Type) && c.Bad() {
				problem = c.Type + "=" + c.Status + " " + c.Reason
				message = c.Message
				break
			}
		}
		switch {
		case problem != "" && v.problems[r.Name] != problem:
			// Once per reason: the message grows as more problems join.
			v.problems[r.Name] = problem
			v.line(now, "\x1b[31m", r.Name, "DETECTED "+problem+": "+shorten(message, 100))
		case problem == "":
			delete(v.problems, r.Name)
		}
	}
}

// incidents prints every phase an incident entered since the last poll.
func (v *demoView) incidents(rems []gpuhealv1.NodeRemediation) {
	slices.SortFunc(rems, func(a, b gpuhealv1.NodeRemediation) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
	})
	for i := range rems {
		r := &rems[i]
		var lines []viewLine
		for _, p := range r.Status.Phases[min(v.printed[r.Name], len(r.Status.Phases)):] {
			color, what := v.describePhase(r, p)
			lines = append(lines, viewLine{p.Time.Time, color, r.Spec.NodeName, what})
		}
		v.printed[r.Name] = len(r.Status.Phases)
		lines = append(lines, v.checkResults(r)...)
		lines = append(lines, v.resetLines(r)...)
		// A check's result comes before the phase it led to.
		slices.SortStableFunc(lines, func(a, b viewLine) int { return a.at.Compare(b.at) })
		for _, l := range lines {
			v.line(l.at, l.color, l.subject, l.what)
		}
	}
}

// lemonLines prints each incident the lemon rule decided, once its node's
// fate is known: the machine, the incidents that made it a lemon, and its
// replacement.
func (v *demoView) lemonLines(now time.Time, rems []gpuhealv1.NodeRemediation, events []corev1.Event) {
	notes := lemonEvents(events)
	for i := range rems {
		r := &rems[i]
		note, ok := notes[r.Name]
		if !ok || v.lemons[r.Name] {
			continue
		}
		if outcome := lemonOutcome(r); outcome != "" {
			v.lemons[r.Name] = true
			v.line(now, "\x1b[35m", r.Spec.NodeName, describeLemonRetired(note, v.start, outcome))
		}
	}
}

type viewLine struct {
	at                   time.Time
	color, subject, what string
}

// checkResults are the lines of the incident's health-gate checks that
// have an outcome since the last poll: what each measured against what it
// had to reach.
func (v *demoView) checkResults(r *gpuhealv1.NodeRemediation) []viewLine {
	var lines []viewLine
	done := 0
	for _, c := range r.Status.Validation {
		if c.Outcome == "" || c.Finished == nil {
			continue
		}
		done++
		if done <= v.checks[r.Name] {
			continue
		}
		color := "\x1b[32m"
		if c.Outcome != gpuhealv1.CheckPassed {
			color = "\x1b[31m"
		}
		lines = append(lines, viewLine{c.Finished.Time, color, c.Node, describeCheck(c)})
	}
	v.checks[r.Name] = max(v.checks[r.Name], done)
	return lines
}

// resetLines are the lines of the incident's GPU reset not printed yet:
// which pods the drain moved once the reset is requested, and the agent's
// answer once it came. They are timed by the incident's phases (to the
// microsecond; the request's and answer's own times are whole seconds):
// entering Resetting, and the phase the answer led to.
func (v *demoView) resetLines(r *gpuhealv1.NodeRemediation) []viewLine {
	g := r.Status.GPUReset
	if g == nil || g.RequestedAt == nil {
		return nil
	}
	asked, answered := g.RequestedAt.Time, time.Time{}
	for i, p := range r.Status.Phases {
		if p.Phase == gpuhealv1.PhaseResetting {
			asked = p.Time.Time
			if i+1 < len(r.Status.Phases) {
				answered = r.Status.Phases[i+1].Time.Time
			}
		}
	}
	var lines []viewLine
	gpus := describeGPUs(g.GPUs)
	if v.resets[r.Name] < 1 {
		what := "whole-node drain before resetting " + gpus + ": " + g.DrainScope
		if g.PartialDrain {
			what = fmt.Sprintf("partial drain: %d pod(s) moved off %s (%s); the node stays schedulable",
				len(r.Status.EvictedPods), gpus, strings.Join(firstPods(r.Status.EvictedPods, 3), ", "))
		}
		lines = append(lines, viewLine{asked.Add(-time.Microsecond), "\x1b[33m", r.Spec.NodeName, what})
		v.resets[r.Name] = 1
	}
	if v.resets[r.Name] < 2 && g.Outcome != "" && g.Outcome != gpuhealv1.GPUResetRunning && !answered.IsZero() {
		color := "\x1b[32m"
		what := fmt.Sprintf("reset %s %s in %s", gpus, strings.ToUpper(g.Outcome), answered.Sub(asked).Round(time.Millisecond))
		if g.Outcome != gpuhealv1.GPUResetSucceeded {
			color = "\x1b[31m"
			what += " (" + g.Reason + ": " + shorten(g.Message, 80) + "); rebooting instead"
		}
		// Before the phase it led to.
		lines = append(lines, viewLine{answered.Add(-time.Microsecond), color, r.Spec.NodeName, what})
		v.resets[r.Name] = 2
	}
	return lines
}

func describeGPUs(gpus []gpuhealv1.GPURef) string {
	names := make([]string, 0, len(gpus))
	for _, g := range gpus {
		names = append(names, fmt.Sprintf("GPU %d", g.Index))
	}
	return strings.Join(names, ", ")
}

func firstPods(pods []string, n int) []string {
	if len(pods) <= n {
		return pods
	}
	return append(slices.Clone(pods[:n]), fmt.Sprintf("and %d more", len(pods)-n))
}

// describeCheck is one finished check on one line: "check nccl (NCCL)
// FAILED: 231.0 GB/s, floor 350 GB/s, in 41s: <why>".
func describeCheck(c gpuhealv1.CheckResult) string {
	text := fmt.Sprintf("check %s (%s) %s", c.Name, c.Kind, strings.ToUpper(string(c.Outcome)))
	var parts []string
	if c.Value != "" {
		parts = append(parts, c.Value)
	}
	if c.Floor != "" {
		parts = append(parts, "floor "+c.Floor)
	}
	if c.Finished != nil {
		parts = append(parts, "in "+c.Finished.Sub(c.Started.Time).Round(time.Second).String())
	}
	if len(parts) > 0 {
		text += ": " + strings.Join(parts, ", ")
	}
	if c.Outcome != gpuhealv1.CheckPassed && c.Message != "" {
		text += " — " + shorten(c.Message, 100)
	}
	return text
}

func (v *demoView) describePhase(r *gpuhealv1.NodeRemediation, p gpuhealv1.PhaseTransition) (color, what string) {
	msg := ""
	if p.Message != "" {
		msg = ": " + p.Message
	}
	switch p.Phase {
	case gpuhealv1.PhasePending:
		return "\x1b[33m", fmt.Sprintf("incident %s opened (%s)%s", r.Name, r.Spec.Trigger.Reason, msg)
	case gpuhealv1.PhaseSucceeded:
		ttr := p.Time.Sub(r.Spec.Trigger.Since.Time).Round(time.Second)
		v.recovered = append(v.recovered, ttr)
		repl := ""
		if r.Status.Replacement != "" {
			repl = ", replaced by " + r.Status.Replacement
		}
		action := strings.ToLower(string(r.Status.Action))
		if r.Status.Action == gpuhealv1.ActionResetGPU {
			action = "reset-gpu"
		}
		return "\x1b[32m", fmt.Sprintf("RECOVERED in %s from detection (%s%s)", ttr, action, repl)
	case gpuhealv1.PhaseFailed:
		v.failed++
		return "\x1b[31m", "FAILED" + msg
	}
	return "\x1b[33m", strings.ToLower(string(p.Phase)) + msg
}

// summary prints the fleet's counts (when given: nil at the end, when the
// cluster is no longer read) and the times to recover so far.
func (v *demoView) summary(now time.Time, fleet *fleetview.Summary) {
	ttr := "-"
	if len(v.recovered) > 0 {
		s := slices.Clone(v.recovered)
		slices.Sort(s)
		ttr = fmt.Sprintf("p50 %s, max %s", s[len(s)/2], s[len(s)-1])
	}
	counts := ""
	if fleet != nil {
		counts = fmt.Sprintf("%d/%d nodes in service · ", fleet.Healthy+fleet.Warning, fleet.Nodes)
	}
	v.line(now, "\x1b[1m", "fleet", fmt.Sprintf("%s%d recovered, %d failed · time to recover %s", counts, len(v.recovered), v.failed, ttr))
}

func (v *demoView) line(at time.Time, color, subject, what string) {
	elapsed := at.Sub(v.start).Round(time.Second)
	if elapsed < 0 {
		elapsed = 0
	}
	text := fmt.Sprintf("[+%8s] %-16s %s", elapsed, subject, what)
	if v.color && color != "" {
		text = color + text + colorReset
	}
	fmt.Fprintln(v.out, text)
}

// shorten cuts text to n runes with an ellipsis, for one-line output.
func shorten(text string, n int) string {
	r := []rune(text)
	if len(r) <= n {
		return text
	}
	return string(r[:n-1]) + "…"
}
