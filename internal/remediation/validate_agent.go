package remediation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/termsafe"
)

// maxAgentReport bounds the agent's report annotation. The node's own
// agent writes it, and whoever owns the node owns the agent: a bigger one
// is refused unread rather than decoded into the controller's memory.
// Eight checks with their messages take about 2 KiB.
const maxAgentReport = 16 << 10

// maxAgentChecks bounds the entries of a report (the agent has 8 checks).
const maxAgentChecks = 64

// parseAgentReport decodes AnnotationAgentChecks: one bounded JSON object
// of v1alpha1.AgentChecks, nothing after it, a time, named checks each at
// most once. Fields it does not know are skipped: a newer agent may add
// some, and refusing them would fail every node it runs on.
func parseAgentReport(raw string) (*v1alpha1.AgentChecks, error) {
	if len(raw) > maxAgentReport {
		return nil, fmt.Errorf("annotation %s: %d bytes, more than the %d a report may have", v1alpha1.AnnotationAgentChecks, len(raw), maxAgentReport)
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	var rep v1alpha1.AgentChecks
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("annotation %s: not a report of the agent's checks: %w", v1alpha1.AnnotationAgentChecks, jsonAt(raw, dec, err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("annotation %s: data after the report at byte %d", v1alpha1.AnnotationAgentChecks, dec.InputOffset())
	}
	switch {
	case rep.Time.IsZero():
		return nil, fmt.Errorf("annotation %s: the report has no time", v1alpha1.AnnotationAgentChecks)
	case len(rep.Checks) > maxAgentChecks:
		return nil, fmt.Errorf("annotation %s: %d checks, more than %d", v1alpha1.AnnotationAgentChecks, len(rep.Checks), maxAgentChecks)
	}
	seen := make(map[string]bool, len(rep.Checks))
	for i, c := range rep.Checks {
		switch {
		case c.Name == "":
			return nil, fmt.Errorf("annotation %s: check %d has no name", v1alpha1.AnnotationAgentChecks, i)
		case seen[c.Name]:
			return nil, fmt.Errorf("annotation %s: check %q twice (entries up to %d)", v1alpha1.AnnotationAgentChecks, truncate(c.Name, 64), i)
		}
		seen[c.Name] = true
	}
	return &rep, nil
}

// jsonAt names the byte where decoding stopped, when the error knows it.
func jsonAt(raw string, dec *json.Decoder, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("%w (at byte %d)", err, syn.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("%w (at byte %d)", err, typ.Offset)
	case errors.Is(err, io.EOF) && strings.TrimSpace(raw) == "":
		return errors.New("empty")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("cut short at byte %d", dec.InputOffset())
	}
	return err
}

// agentVerdict is the gate's judgement of an agent report; pending means
// the report cannot be judged yet (none, or one from before the check).
type agentVerdict struct {
	outcome v1alpha1.CheckOutcome
	pending string // why the check waits; empty once judged
	value   string
	floor   string
	message string
	excerpt string
}

// judgeAgentReport judges the raw annotation for a check that began at
// since on a node whose kubelet reports bootID. A report is fresh when it
// was made at or after the second the check began (the wire's precision)
// and, when both sides know it, on the node's current boot: a report from
// before a reboot never passes. names are the checks that must pass (empty:
// all of them); one the report lacks fails.
func judgeAgentReport(raw string, present bool, since time.Time, bootID string, names []string) agentVerdict {
	if len(names) == 0 {
		names = v1alpha1.AgentCheckNames
	}
	v := agentVerdict{floor: agentFloor(names)}
	if !present {
		v.pending = "the node has no report of the agent's checks (annotation " + v1alpha1.AnnotationAgentChecks + ")"
		return v
	}
	rep, err := parseAgentReport(raw)
	if err != nil {
		// No report to judge yet, as if there were none: an agent mid
		// upgrade may write a better one; the check's timeout ends the wait.
		v.pending = "the node's report of the agent's checks is unreadable: " + cleanLine(err.Error(), 512)
		v.excerpt = excerptOf(raw, 512)
		return v
	}
	sinceSecond := since.Truncate(time.Second)
	switch {
	case rep.Time.Time.Before(sinceSecond):
		v.pending = fmt.Sprintf("the agent's last report is from %s, before the check began at %s",
			rep.Time.UTC().Format(time.RFC3339), sinceSecond.UTC().Format(time.RFC3339))
		return v
	case rep.BootID != "" && bootID != "" && rep.BootID != bootID:
		v.pending = fmt.Sprintf("the agent's report is of boot %s, the node runs boot %s", cleanLine(rep.BootID, 64), cleanLine(bootID, 64))
		return v
	}
	byName := make(map[string]v1alpha1.AgentCheck, len(rep.Checks))
	for _, c := range rep.Checks {
		byName[c.Name] = c
	}
	var failed []string
	var details []string
	for _, name := range names {
		c, ok := byName[name]
		switch {
		case !ok:
			failed = append(failed, name)
			details = append(details, name+": absent from the agent's report")
		case !c.Passed:
			failed = append(failed, name)
			d := name + ": " + oneLine(c.Message)
			if c.Value != "" || c.Expected != "" {
				d += fmt.Sprintf(" (found %s, expected %s)", oneLine(c.Value), oneLine(c.Expected))
			}
			details = append(details, d)
		}
	}
	if len(failed) == 0 {
		v.outcome = v1alpha1.CheckPassed
		v.value = fmt.Sprintf("PASS (%d agent checks)", len(names))
		v.message = "the agent's report of " + rep.Time.UTC().Format(time.RFC3339) + " passes " + strings.Join(names, ", ")
		return v
	}
	v.outcome = v1alpha1.CheckFailed
	v.value = truncate("FAIL: "+strings.Join(failed, ", "), 160)
	v.message = truncate(strings.Join(details, "; "), 1024)
	v.excerpt = excerptOf(compactJSON(raw), 2048)
	return v
}

// excerptOf is text from the node cleaned of control sequences (it is
// shown on terminals by kubectl and gpuheal) and cut to n bytes.
func excerptOf(s string, n int) string {
	s = termsafe.Clean(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n-- // not mid-character
	}
	return s[:n]
}

// agentFloor says which agent checks must pass.
func agentFloor(names []string) string {
	if len(names) == len(v1alpha1.AgentCheckNames) {
		return "every agent check passes"
	}
	return "passes: " + strings.Join(names, ", ")
}

// oneLine keeps text from the node short and on one line.
func oneLine(s string) string { return cleanLine(s, 200) }

// cleanLine is s without control characters, cut to n bytes.
func cleanLine(s string, n int) string {
	return truncate(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s), n)
}

// compactJSON is raw with insignificant space removed, for an excerpt.
func compactJSON(raw string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(raw)) != nil {
		return raw
	}
	return b.String()
}
