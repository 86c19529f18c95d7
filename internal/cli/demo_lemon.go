package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	gpuhealv1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/fleetview"
)

// The demo's repeat offender: one node gets a GPU that falls off the bus
// each time it is back in service. A reboot cures each fault, so without
// the lemon rule it would be rebooted again and again; the demo's policy
// retires it at its second hardware incident (the default rule waits for
// the third, and by then the reboot escalation, two reboots a day, would
// replace the node before the rule is asked).
const (
	demoLemonIncidents = 2
	demoLemonClass     = "faulty-gpu"
	demoLemonGPU       = 5
)

// demoLemonWindow is the policy's lemon window, the API's default.
const demoLemonWindow = 720 * time.Hour

// demoLemonFrom: the lemon's first fault comes after the scheduled ones
// have surfaced (the last, the latent node's, at demoLatentAt).
const demoLemonFrom = demoLatentAt + 5*time.Second

// lemonPlanter plants the repeat offender's faults from the demo view's
// poll: the next one only once the node is back in service (healthy,
// schedulable, no open incident), so that it opens a new incident rather
// than joining the last one; and only after the scheduled planted faults
// and while one more node out of service leaves the breaker closed. A
// small fleet's breaker (20% of 8 nodes is one) would otherwise hold two
// nodes in Pending with none in repair to bring the count down: every
// repair would stop.
type lemonPlanter struct {
	node    string
	from    time.Time // not before the scheduled faults have surfaced
	planted int
	// wait is how long the node may take to come back; past deadline the
	// planter gives up.
	wait     time.Duration
	deadline time.Time
	done     bool
	// inject asks the sim fleet for the fault; an errNotNow is tried
	// again at the next poll.
	inject func(ctx context.Context) error
}

func newLemonPlanter(node, agentAddr string, now time.Time, wait time.Duration) *lemonPlanter {
	return &lemonPlanter{node: node, from: now.Add(demoLemonFrom), wait: wait, deadline: now.Add(demoLemonFrom + wait),
		inject: func(ctx context.Context) error {
			return injectSimFault(ctx, agentAddr, node, demoLemonClass, demoLemonGPU)
		}}
}

// errNotNow: the sim fleet has no agent up on the node (it boots) or the
// node already carries a fault; the planter asks again at the next poll.
type errNotNow struct{ why string }

func (e errNotNow) Error() string { return e.why }

// step plants the next fault when the node is in service, and says what
// it did for the demo's output ("" when nothing).
func (p *lemonPlanter) step(ctx context.Context, now time.Time, rows []fleetview.Row) string {
	if p.done {
		return ""
	}
	var row *fleetview.Row
	for i := range rows {
		if rows[i].Name == p.node {
			row = &rows[i]
		}
	}
	if row == nil && p.planted > 0 {
		p.done = true // replaced: the lemon line says by what
		return ""
	}
	if row == nil || !inService(row) || now.Before(p.from) || !breakerRoom(rows) {
		if now.After(p.deadline) {
			p.done = true
			return fmt.Sprintf("not back in service %s after its last fault; planting no more faults on it", p.wait)
		}
		return ""
	}
	err := p.inject(ctx)
	switch {
	case err == nil:
	case isNotNow(err):
		return ""
	default:
		p.done = true
		return "planting its next fault: " + err.Error()
	}
	p.planted++
	p.deadline = now.Add(p.wait)
	p.done = p.planted >= demoLemonIncidents
	return fmt.Sprintf("planted %s on GPU %d, hardware incident %d of %d that the lemon rule counts", demoLemonClass, demoLemonGPU, p.planted, demoLemonIncidents)
}

func inService(r *fleetview.Row) bool {
	return r.State.InService() && r.Incident == "" && !r.Unschedulable
}

// breakerRoom: one more node out of service keeps the demo policy's
// breaker closed.
func breakerRoom(rows []fleetview.Row) bool {
	out := 0
	for i := range rows {
		if !inService(&rows[i]) {
			out++
		}
	}
	return out+1 <= len(rows)*demoMaxUnhealthyPercent/100
}

func isNotNow(err error) bool { return errors.As(err, new(errNotNow)) }

// injectSimFault asks the sim fleet for a fault on a node now.
func injectSimFault(ctx context.Context, agentAddr, node, class string, gpu int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u := fmt.Sprintf("http://%s/nodes/%s/faults?%s", agentAddr, url.PathEscape(node),
		url.Values{"class": {class}, "gpu": {strconv.Itoa(gpu)}}.Encode())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("asking the sim fleet for a fault on node %s: %w", node, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusNotFound, http.StatusConflict:
		return errNotNow{strings.TrimSpace(string(body))}
	}
	return fmt.Errorf("asking the sim fleet for a fault on node %s: %s: %s", node, resp.Status, strings.TrimSpace(string(body)))
}

// lemonNoteRE reads the note of a LemonRetired Event, as the controller
// writes it (internal/remediation/lemon.go, describeLemon).
var (
	lemonNoteRE     = regexp.MustCompile(`^lemon: machine (\S+) had (\d+) hardware incidents within (\S+) \(the rule: (\d+)\)(?:, all of GPU (\S+))?: (.+?); (.+)$`)
	lemonIncidentRE = regexp.MustCompile(`^(\S+) on (\S+) at (\S+) \((\S+)\)$`)
)

// describeLemonRetired is the demo's line for a lemon: the machine, its
// incidents (times from the demo's start) and what became of the node.
// A note it cannot read is printed as it is.
func describeLemonRetired(note string, start time.Time, outcome string) string {
	m := lemonNoteRE.FindStringSubmatch(note)
	if m == nil {
		return "LEMON RETIRED: " + strings.TrimPrefix(note, "lemon: ") + "; " + outcome
	}
	var incidents []string
	for _, s := range strings.Split(m[6], ", ") {
		im := lemonIncidentRE.FindStringSubmatch(strings.TrimSpace(s))
		if im == nil {
			incidents = append(incidents, s)
			continue
		}
		at := im[3]
		if t, err := time.Parse(time.RFC3339, im[3]); err == nil {
			at = "+" + max(t.Sub(start), 0).Round(time.Second).String()
		}
		incidents = append(incidents, fmt.Sprintf("%s at %s (%s)", im[1], at, im[4]))
	}
	gpu := ""
	if m[5] != "" {
		gpu = ", all on GPU " + m[5]
	}
	return fmt.Sprintf("LEMON RETIRED (machine %s): %s hardware incidents in %s%s, the rule's limit %s: %s; %s",
		m[1], m[2], shortDuration(m[3]), gpu, m[4], strings.Join(incidents, ", "), outcome)
}

// shortDuration drops a Go duration's zero minutes and seconds: 720h.
func shortDuration(s string) string {
	if d, err := time.ParseDuration(s); err == nil && d >= time.Minute {
		s = strings.TrimSuffix(d.String(), "0s")
		if d >= time.Hour {
			s = strings.TrimSuffix(s, "0m")
		}
	}
	return s
}

// lemonOutcome is what became of a retired node, or "" while it is not
// known yet (a replacement not yet named).
func lemonOutcome(r *gpuhealv1.NodeRemediation) string {
	switch {
	case r.Status.Replacement != "":
		return "replaced by " + r.Status.Replacement
	case r.Status.Action == gpuhealv1.ActionCordonOnly:
		return "quarantined: cordoned for a person (RMA)"
	case r.Status.Phase.Terminal():
		return "the incident ended " + strings.ToLower(string(r.Status.Phase)) + " without a replacement"
	}
	return ""
}

// lemonEvents are the controller's LemonRetired Events, by the incident
// they name.
func lemonEvents(events []corev1.Event) map[string]string {
	out := map[string]string{}
	for _, e := range events {
		if e.Reason != gpuhealv1.EventReasonLemon || e.Related == nil {
			continue
		}
		out[e.Related.Name] = e.Message
	}
	return out
}
