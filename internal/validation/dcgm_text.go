package validation

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

var (
	// "|-----  Deployment  --------+----…|" and "+-----  Hardware  ----------+----…+"
	dcgmCategoryRe = regexp.MustCompile(`^[|+]-{3,}\s+(\S.*?)\s+-+\+`)
	// the closing border "+---…---+---…---+"
	dcgmBorderRe = regexp.MustCompile(`^\+-+\+-+\+$`)
	// 4.x per-GPU line: "GPU3: Fail"
	dcgmGPULineRe = regexp.MustCompile(`^GPU\s*(\d+)\s*:\s*(\S.*)$`)
	// 3.x result: "Pass", "Pass - All", "Fail - GPU: 3", "Pass - GPUs: 1, 2, 3"
	dcgmResultRe = regexp.MustCompile(`^(?i)(pass|fail|warn|skip|not run)\b(?:\s*-\s*(.*))?$`)
	dcgmGPUList  = regexp.MustCompile(`^(?i)GPUs?\s*:?\s*([\d,\s]+)$`)
)

// parseDCGMText reads the `dcgmi diag` table. A test row names the test
// and its result; rows with an empty first cell carry per-GPU results
// (4.x "GPU3: Fail", 3.x "Fail - GPU: 3") or continue a Warning, Error or
// Info row, whose text DCGM wraps at the column's width, mid-word.
func parseDCGMText(output []byte) (*DCGMReport, error) {
	rep := &DCGMReport{Format: DCGMFormatText, text: map[int][]string{}}
	lines := splitLines(output)
	started, closed := false, false
	category, cur := "", -1
	var msg *string // the Warning/Error/Info text being continued
	for n, raw := range lines {
		line := strings.TrimRight(raw, " \t")
		lineNo := n + 1
		if !started {
			if strings.HasPrefix(line, "|") && strings.Contains(line, "Diagnostic") && strings.Contains(line, "Result") {
				started = true
			}
			continue
		}
		if closed || line == "" || strings.HasPrefix(line, "+===") {
			continue
		}
		if m := dcgmCategoryRe.FindStringSubmatch(line); m != nil {
			category, cur, msg = m[1], -1, nil
			continue
		}
		if dcgmBorderRe.MatchString(line) {
			closed = true
			continue
		}
		if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 4 {
			return nil, fmt.Errorf("DCGM table line %d is not a table row: %q", lineNo, cut(line, 80))
		}
		inner := line[1 : len(line)-1]
		sep := strings.IndexByte(inner, '|')
		if sep < 0 {
			return nil, fmt.Errorf("DCGM table line %d has one column, want two: %q", lineNo, cut(line, 80))
		}
		name := strings.TrimSpace(inner[:sep])
		value := wrapChunk(inner[sep+1:])
		trimmed := strings.TrimSpace(value)
		if cur >= 0 {
			rep.text[cur] = append(rep.text[cur], line)
		}
		if category == "Metadata" {
			if name == "DCGM Version" {
				rep.Version = cut(trimmed, 32)
			}
			continue
		}
		switch {
		case name != "" && isDCGMMessageRow(name):
			texts := &rep.Errors
			if cur >= 0 {
				texts = &rep.Tests[cur].Warnings
			} else if !strings.EqualFold(name, "Error") {
				texts = nil // a warning or info outside any test says nothing about one
			}
			msg = nil
			if texts != nil && len(*texts) < maxMessages {
				*texts = append(*texts, value)
				msg = &(*texts)[len(*texts)-1]
			}
		case name != "":
			if len(rep.Tests) == maxTests {
				return nil, fmt.Errorf("DCGM table has more than %d tests", maxTests)
			}
			st, gpus, err := dcgmTextResult(trimmed)
			if err != nil {
				return nil, fmt.Errorf("DCGM table line %d, test %q: %w", lineNo, cut(name, 40), err)
			}
			rep.Tests = append(rep.Tests, DCGMTest{Category: category, Name: name, Status: st, Results: gpuResults(gpus, st)})
			cur, msg = len(rep.Tests)-1, nil
			rep.text[cur] = []string{line}
		case cur < 0:
			if msg != nil {
				*msg = cut(*msg+value, maxMessage)
			}
		default:
			t := &rep.Tests[cur]
			if m := dcgmGPULineRe.FindStringSubmatch(trimmed); m != nil {
				st, err := dcgmStatus(m[2])
				if err != nil {
					return nil, fmt.Errorf("DCGM table line %d, test %q GPU %s: %w", lineNo, t.Name, m[1], err)
				}
				t.addResult(DCGMResult{GPU: m[1], Status: st})
				msg = nil
			} else if m := dcgmResultRe.FindStringSubmatch(trimmed); m != nil && msg == nil {
				st, gpus, _ := dcgmTextResult(trimmed)
				for _, r := range gpuResults(gpus, st) {
					t.addResult(r)
				}
				if statusRank[st] > statusRank[t.Status] {
					t.Status = st
				}
			} else if msg != nil {
				*msg = cut(*msg+value, maxMessage)
			}
		}
	}
	switch {
	case !started:
		return nil, errors.New(`DCGM table has no "| Diagnostic | Result |" header`)
	case !closed:
		return nil, fmt.Errorf("DCGM table is truncated: no closing border after its last line (%d)", len(lines))
	case len(rep.Tests) == 0 && len(rep.Errors) == 0:
		return nil, errors.New("DCGM table lists no tests")
	}
	for i := range rep.Errors {
		rep.Errors[i] = strings.TrimSpace(rep.Errors[i])
	}
	for i := range rep.Tests {
		for j := range rep.Tests[i].Warnings {
			rep.Tests[i].Warnings[j] = strings.TrimSpace(rep.Tests[i].Warnings[j])
		}
		if w := worstResult(rep.Tests[i].Results); statusRank[w] > statusRank[rep.Tests[i].Status] {
			rep.Tests[i].Status = w
		}
	}
	return rep, nil
}

func isDCGMMessageRow(name string) bool {
	switch strings.ToLower(name) {
	case "warning", "error", "info":
		return true
	}
	return false
}

// dcgmTextResult reads a result cell: the status and, in 3.x's form, the
// GPUs it covers ("Fail - GPU: 3", "Pass - GPUs: 1, 2"; "All" is none).
func dcgmTextResult(s string) (DCGMStatus, []string, error) {
	m := dcgmResultRe.FindStringSubmatch(s)
	if m == nil {
		return "", nil, fmt.Errorf("result %q is not Pass, Fail, Warn, Skip or Not Run", cut(s, 60))
	}
	st, err := dcgmStatus(m[1])
	if err != nil {
		return "", nil, err
	}
	var gpus []string
	if g := dcgmGPUList.FindStringSubmatch(strings.TrimSpace(m[2])); g != nil {
		for _, f := range strings.FieldsFunc(g[1], func(r rune) bool { return r == ',' || r == ' ' }) {
			if len(gpus) < maxResults {
				gpus = append(gpus, f)
			}
		}
	}
	return st, gpus, nil
}

func gpuResults(gpus []string, st DCGMStatus) []DCGMResult {
	var rs []DCGMResult
	for _, g := range gpus {
		rs = append(rs, DCGMResult{GPU: g, Status: st})
	}
	return rs
}

func (t *DCGMTest) addResult(r DCGMResult) {
	if len(t.Results) < maxResults {
		t.Results = append(t.Results, r)
	}
}

// wrapChunk is a result cell's text as DCGM wrote it: the cell is a space,
// the text (DCGM cuts long text into pieces of exactly the width, mid-word
// or before a space) and two spaces of margin. Joining the pieces as they
// are restores the text.
func wrapChunk(cell string) string {
	width := len(cell) - 3
	if width < 1 || len(cell) < 2 {
		return strings.TrimSpace(cell)
	}
	return cell[1 : 1+width]
}
