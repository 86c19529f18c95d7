package validation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// DCGMStatus is a test's or a GPU's result, in DCGM's words.
type DCGMStatus string

// DCGM result words (case as the text table prints them).
const (
	DCGMPass   DCGMStatus = "Pass"
	DCGMFail   DCGMStatus = "Fail"
	DCGMWarn   DCGMStatus = "Warn"
	DCGMSkip   DCGMStatus = "Skip"
	DCGMNotRun DCGMStatus = "Not Run"
)

// DCGM output formats ParseDCGM recognises.
const (
	DCGMFormatJSON3 = "json-3.x" // {"DCGM GPU Diagnostic": …}
	DCGMFormatJSON4 = "json-4.x" // {"DCGM Diagnostic": …, "entity_groups": …}
	DCGMFormatText  = "text"     // the "| Diagnostic | Result |" table
)

// DCGMResult is one test's result on one GPU ("" when DCGM gave one
// result for the whole node, as the 3.x deployment tests do).
type DCGMResult struct {
	GPU      string     `json:"gpu,omitempty"`
	Status   DCGMStatus `json:"status"`
	Warnings []string   `json:"warnings,omitempty"`
}

// DCGMTest is one diagnostic test.
type DCGMTest struct {
	Category string     `json:"category"`
	Name     string     `json:"name"`
	Status   DCGMStatus `json:"status"`
	// Warnings DCGM gave for the test as a whole (the text table's
	// "Warning" rows, 4.x's test_summary).
	Warnings []string     `json:"warnings,omitempty"`
	Results  []DCGMResult `json:"results,omitempty"`
}

// DCGMReport is a parsed `dcgmi diag` output.
type DCGMReport struct {
	Format  string     `json:"format"`
	Version string     `json:"version,omitempty"`
	Tests   []DCGMTest `json:"tests"`
	// Errors DCGM reported outside any test (a 4.x runtime_error, a text
	// "Error" row before the first test).
	Errors []string `json:"errors,omitempty"`
	// lines of the text table per test, for excerpts.
	text map[int][]string
}

// Bounds on what a parser keeps of untrusted output.
const (
	maxTests    = 256
	maxResults  = 1024
	maxMessages = 64
	maxMessage  = 1024
)

// ParseDCGM reads `dcgmi diag` output: JSON from -j (3.x or 4.x shape) or
// the text table, with any lines dcgmi prints around them.
func ParseDCGM(output []byte) (*DCGMReport, error) {
	if len(bytes.TrimSpace(output)) == 0 {
		return nil, errors.New("DCGM output is empty")
	}
	if i := bytes.IndexByte(output, '{'); i >= 0 && (bytes.Contains(output, []byte(`"DCGM GPU Diagnostic"`)) || bytes.Contains(output, []byte(`"DCGM Diagnostic"`))) {
		return parseDCGMJSON(output[i:])
	}
	if bytes.Contains(output, []byte("| Diagnostic ")) || bytes.Contains(output, []byte("|Diagnostic ")) {
		return parseDCGMText(output)
	}
	return nil, errors.New(`not DCGM diag output: neither its JSON ("DCGM GPU Diagnostic" or "DCGM Diagnostic") nor its "| Diagnostic | Result |" table`)
}

type dcgmJSONDoc struct {
	V3 *dcgmJSONBody `json:"DCGM GPU Diagnostic"`
	V4 *dcgmJSONBody `json:"DCGM Diagnostic"`
	// 4.x moved the version into metadata.
	Metadata map[string]any `json:"metadata"`
}

type dcgmJSONBody struct {
	Categories []struct {
		Category string `json:"category"`
		Tests    []struct {
			Name    string           `json:"name"`
			Results []dcgmJSONResult `json:"results"`
			Summary *dcgmJSONResult  `json:"test_summary"`
		} `json:"tests"`
	} `json:"test_categories"`
	Version      string `json:"version"`
	RuntimeError string `json:"runtime_error"`
}

type dcgmJSONResult struct {
	GPUID    json.RawMessage `json:"gpu_id"`
	GPUIDs   json.RawMessage `json:"gpu_ids"`
	EntityID *int            `json:"entity_id"`
	Group    string          `json:"entity_group"`
	Status   string          `json:"status"`
	Warnings json.RawMessage `json:"warnings"`
}

func parseDCGMJSON(doc []byte) (*DCGMReport, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var d dcgmJSONDoc
	if err := dec.Decode(&d); err != nil {
		return nil, jsonError(doc, dec.InputOffset(), err)
	}
	rep := &DCGMReport{Format: DCGMFormatJSON3}
	body := d.V3
	if d.V4 != nil {
		rep.Format, body = DCGMFormatJSON4, d.V4
	}
	if body == nil {
		return nil, errors.New(`DCGM JSON has neither "DCGM GPU Diagnostic" nor "DCGM Diagnostic" at its top level`)
	}
	rep.Version = body.Version
	if v, ok := d.Metadata["DCGM Version"].(string); ok {
		rep.Version = v
	}
	if body.RuntimeError != "" {
		rep.Errors = append(rep.Errors, cut(body.RuntimeError, maxMessage))
	}
	for ci, c := range body.Categories {
		for ti, t := range c.Tests {
			if len(rep.Tests) == maxTests {
				return nil, fmt.Errorf("DCGM JSON has more than %d tests", maxTests)
			}
			test := DCGMTest{Category: c.Category, Name: t.Name}
			if test.Name == "" {
				return nil, fmt.Errorf("DCGM JSON test_categories[%d].tests[%d] has no name", ci, ti)
			}
			for ri, r := range t.Results {
				if ri == maxResults {
					break
				}
				st, err := dcgmStatus(r.Status)
				if err != nil {
					return nil, fmt.Errorf("DCGM JSON test %q result %d: %w", t.Name, ri, err)
				}
				test.Results = append(test.Results, DCGMResult{GPU: r.gpu(), Status: st, Warnings: jsonWarnings(r.Warnings)})
			}
			if t.Summary != nil && t.Summary.Status != "" {
				st, err := dcgmStatus(t.Summary.Status)
				if err != nil {
					return nil, fmt.Errorf("DCGM JSON test %q test_summary: %w", t.Name, err)
				}
				test.Status = st
				test.Warnings = jsonWarnings(t.Summary.Warnings)
			} else {
				// 3.x has no summary: the worst of its results.
				test.Status = worstResult(test.Results)
			}
			if test.Status == "" {
				return nil, fmt.Errorf("DCGM JSON test %q has no status", t.Name)
			}
			rep.Tests = append(rep.Tests, test)
		}
	}
	if len(rep.Tests) == 0 && len(rep.Errors) == 0 {
		return nil, errors.New("DCGM JSON lists no tests")
	}
	return rep, nil
}

// gpu is the GPU a JSON result is about: 3.x's gpu_id or gpu_ids (a string,
// "0" or "0,1,2,3" for the node-wide deployment tests), 4.x's entity_id of
// entity_group GPU.
func (r dcgmJSONResult) gpu() string {
	if r.EntityID != nil && (r.Group == "" || r.Group == "GPU") {
		return fmt.Sprint(*r.EntityID)
	}
	for _, raw := range []json.RawMessage{r.GPUID, r.GPUIDs} {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" && !strings.Contains(s, ",") {
			return cut(s, 16)
		}
		var n int
		if json.Unmarshal(raw, &n) == nil {
			return fmt.Sprint(n)
		}
	}
	return ""
}

// jsonWarnings reads warnings as strings (older 3.x) or objects with a
// "warning" text (3.3 on, 4.x).
func jsonWarnings(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return []string{cut(s, maxMessage)}
		}
		return nil
	}
	var out []string
	for _, it := range items {
		if len(out) == maxMessages {
			break
		}
		var s string
		if json.Unmarshal(it, &s) == nil {
			out = append(out, cut(s, maxMessage))
			continue
		}
		var w struct {
			Warning string `json:"warning"`
		}
		if json.Unmarshal(it, &w) == nil && w.Warning != "" {
			out = append(out, cut(w.Warning, maxMessage))
		}
	}
	return out
}

func dcgmStatus(s string) (DCGMStatus, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "pass":
		return DCGMPass, nil
	case "fail":
		return DCGMFail, nil
	case "warn", "warning":
		return DCGMWarn, nil
	case "skip", "skipped":
		return DCGMSkip, nil
	case "not run", "notrun", "not_run":
		return DCGMNotRun, nil
	}
	return "", fmt.Errorf("unknown status %q (want Pass, Fail, Warn, Skip or Not Run)", cut(s, 40))
}

var statusRank = map[DCGMStatus]int{DCGMNotRun: 0, DCGMSkip: 1, DCGMPass: 2, DCGMWarn: 3, DCGMFail: 4}

// worstResult ranks Fail over Warn over Pass over Skip; "" when none.
func worstResult(rs []DCGMResult) DCGMStatus {
	var w DCGMStatus
	for _, r := range rs {
		if w == "" || statusRank[r.Status] > statusRank[w] {
			w = r.Status
		}
	}
	return w
}

// jsonError names where a JSON document stopped making sense.
func jsonError(doc []byte, off int64, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	if off > int64(len(doc)) {
		off = int64(len(doc))
	}
	line := 1 + bytes.Count(doc[:off], []byte("\n"))
	if errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "unexpected end of JSON input") {
		return fmt.Errorf("DCGM JSON is truncated: it ends at line %d before the document closes", line)
	}
	return fmt.Errorf("DCGM JSON unreadable at line %d (byte %d): %w", line, off, err)
}

// judge turns the report into a verdict: Failed on any Fail, naming each
// failing test and the GPUs it failed on.
func (r *DCGMReport) judge(floor string) Verdict {
	var fails, warns, skips []string
	var failIdx []int
	for i, t := range r.Tests {
		switch t.Status {
		case DCGMFail:
			fails = append(fails, t.Name+onGPUs(t, DCGMFail))
			failIdx = append(failIdx, i)
		case DCGMWarn:
			warns = append(warns, t.Name+onGPUs(t, DCGMWarn))
		case DCGMSkip, DCGMNotRun:
			skips = append(skips, t.Name)
		default:
			if g := onGPUs(t, DCGMWarn); g != "" {
				warns = append(warns, t.Name+g)
			}
			if g := onGPUs(t, DCGMFail); g != "" {
				fails = append(fails, t.Name+g)
				failIdx = append(failIdx, i)
			}
		}
	}
	var note []string
	if len(warns) > 0 {
		note = append(note, "warnings: "+strings.Join(warns, ", "))
	}
	if len(skips) > 0 {
		note = append(note, "skipped: "+strings.Join(skips, ", "))
	}
	if len(fails) == 0 && len(r.Errors) > 0 {
		return Verdict{Outcome: v1alpha1.CheckFailed, Value: cut("FAIL: "+r.Errors[0], maxValue), Floor: floor,
			Message: cut("DCGM reported an error outside any test: "+strings.Join(r.Errors, "; "), maxMessage),
			Excerpt: excerpt(r.Errors, MaxExcerpt)}
	}
	if len(fails) == 0 {
		msg := fmt.Sprintf("all %d DCGM tests passed", len(r.Tests)-len(skips))
		if len(note) > 0 {
			msg += "; " + strings.Join(note, "; ")
		}
		return Verdict{Outcome: v1alpha1.CheckPassed, Value: fmt.Sprintf("PASS (%d tests)", len(r.Tests)-len(skips)), Floor: floor,
			Message: cut(msg, maxMessage), Excerpt: r.excerpt(nil)}
	}
	msg := fmt.Sprintf("%d of %d DCGM tests failed: %s", len(fails), len(r.Tests), strings.Join(fails, ", "))
	if w := r.Tests[failIdx[0]].allWarnings(); len(w) > 0 {
		msg += fmt.Sprintf(" (%s: %s)", r.Tests[failIdx[0]].Name, w[0])
	}
	if len(note) > 0 {
		msg += "; " + strings.Join(note, "; ")
	}
	return Verdict{Outcome: v1alpha1.CheckFailed, Value: cut("FAIL: "+strings.Join(fails, ", "), maxValue), Floor: floor,
		Message: cut(msg, maxMessage), Excerpt: r.excerpt(failIdx)}
}

// onGPUs is " on GPU 3" / " on GPUs 0, 3" for the results of status st,
// "" when none (or when the status is node-wide).
func onGPUs(t DCGMTest, st DCGMStatus) string {
	var gpus []string
	for _, res := range t.Results {
		if res.Status == st && res.GPU != "" {
			gpus = append(gpus, res.GPU)
		}
	}
	switch len(gpus) {
	case 0:
		return ""
	case 1:
		return " on GPU " + gpus[0]
	}
	return " on GPUs " + strings.Join(gpus, ", ")
}

func (t DCGMTest) allWarnings() []string {
	w := append([]string(nil), t.Warnings...)
	for _, r := range t.Results {
		w = append(w, r.Warnings...)
	}
	return w
}

// excerpt shows the failing tests (their table lines, or their results
// and warnings for JSON); with none, the whole table or a summary.
func (r *DCGMReport) excerpt(failing []int) string {
	var lines []string
	idx := failing
	if len(idx) == 0 {
		for i := range r.Tests {
			idx = append(idx, i)
		}
	}
	for _, i := range idx {
		if tl, ok := r.text[i]; ok {
			lines = append(lines, tl...)
			continue
		}
		t := r.Tests[i]
		lines = append(lines, fmt.Sprintf("%s / %s: %s", t.Category, t.Name, t.Status))
		for _, w := range t.Warnings {
			lines = append(lines, "  warning: "+w)
		}
		for _, res := range t.Results {
			if res.Status == DCGMPass && len(failing) > 0 {
				continue
			}
			for _, w := range res.Warnings {
				lines = append(lines, fmt.Sprintf("  GPU %s: %s: %s", res.GPU, res.Status, w))
			}
			if len(res.Warnings) == 0 && res.Status != DCGMPass {
				lines = append(lines, fmt.Sprintf("  GPU %s: %s", res.GPU, res.Status))
			}
		}
	}
	return excerpt(lines, MaxExcerpt)
}
