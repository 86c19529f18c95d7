package validation

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
)

// NVBMatrix is one bandwidth matrix nvbandwidth printed.
type NVBMatrix struct {
	// Test is the testcase ("device_to_device_memcpy_read_ce").
	Test string `json:"test"`
	// Header says what rows and columns are: "memcpy CE GPU(row) ->
	// GPU(column) bandwidth (GB/s)".
	Header string   `json:"header"`
	Cols   []int    `json:"cols"`
	Rows   []NVBRow `json:"rows"`
	lines  []string
}

// NVBRow is a matrix row; a NaN value is N/A (a GPU and itself).
type NVBRow struct {
	Index  int       `json:"index"`
	Values []float64 `json:"values"`
	line   int       // index into NVBMatrix.lines
}

// NVBReport is a parsed nvbandwidth run.
type NVBReport struct {
	Matrices []NVBMatrix        `json:"matrices"`
	Sums     map[string]float64 `json:"sums,omitempty"`
	sumLines map[string]string
}

var (
	nvbRunningRe = regexp.MustCompile(`^Running (\w+)\.?$`)
	nvbHeaderRe  = regexp.MustCompile(`\bbandwidth \(GB/s\)$`)
	nvbSumRe     = regexp.MustCompile(`^SUM (\w+) (\S+)$`)
)

const maxNVBDevices = 256

// ParseNVBandwidth reads nvbandwidth's text output: for each testcase a
// "Running <test>." line, a header naming the rows and columns, the
// column indices, one row per source, and a "SUM <test> <GB/s>" line.
func ParseNVBandwidth(output []byte) (*NVBReport, error) {
	rep := &NVBReport{Sums: map[string]float64{}, sumLines: map[string]string{}}
	test := ""
	var m *NVBMatrix
	finish := func(lineNo int) error {
		if m == nil {
			return nil
		}
		if len(m.Rows) == 0 {
			return fmt.Errorf("nvbandwidth line %d: the matrix of %s has no rows", lineNo, m.Test)
		}
		rep.Matrices = append(rep.Matrices, *m)
		m = nil
		return nil
	}
	lines := splitLines(output)
	for n, raw := range lines {
		line := strings.TrimSpace(raw)
		lineNo := n + 1
		switch {
		case nvbRunningRe.MatchString(line):
			if err := finish(lineNo); err != nil {
				return nil, err
			}
			test = nvbRunningRe.FindStringSubmatch(line)[1]
		case nvbHeaderRe.MatchString(line) && test != "":
			if err := finish(lineNo); err != nil {
				return nil, err
			}
			m = &NVBMatrix{Test: test, Header: cut(line, 120), lines: []string{"Running " + test + ".", cut(line, 120)}}
		case m != nil && m.Cols == nil:
			cols, err := nvbColumns(line)
			if err != nil {
				return nil, fmt.Errorf("nvbandwidth line %d, %s: %w", lineNo, m.Test, err)
			}
			m.Cols = cols
			m.lines = append(m.lines, cut(strings.TrimRight(raw, " "), 512))
		case m != nil && line != "" && !nvbSumRe.MatchString(line):
			row, err := nvbRow(line, len(m.Cols))
			if err != nil {
				return nil, fmt.Errorf("nvbandwidth line %d, %s: %w", lineNo, m.Test, err)
			}
			if len(m.Rows) == maxNVBDevices {
				return nil, fmt.Errorf("nvbandwidth line %d, %s: more than %d rows", lineNo, m.Test, maxNVBDevices)
			}
			row.line = len(m.lines)
			m.lines = append(m.lines, cut(strings.TrimRight(raw, " "), 512))
			m.Rows = append(m.Rows, row)
		case m != nil && line == "":
			if err := finish(lineNo); err != nil {
				return nil, err
			}
		}
		if s := nvbSumRe.FindStringSubmatch(line); s != nil {
			if err := finish(lineNo); err != nil {
				return nil, err
			}
			v, err := strconv.ParseFloat(s[2], 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("nvbandwidth line %d: SUM of %s is %q, not a number", lineNo, s[1], cut(s[2], 40))
			}
			if len(rep.Sums) < maxTests {
				rep.Sums[s[1]], rep.sumLines[s[1]] = v, line
			}
		}
	}
	if err := finish(len(lines)); err != nil {
		return nil, err
	}
	if n := len(rep.Matrices); n > 0 {
		if last := rep.Matrices[n-1].Test; !hasKey(rep.Sums, last) {
			return nil, fmt.Errorf("nvbandwidth output is truncated: the matrix of %s has no SUM line after it (last line %d)", last, len(lines))
		}
	}
	if len(rep.Matrices) == 0 {
		return nil, errors.New(`not nvbandwidth output: no "Running <test>." block with a bandwidth matrix`)
	}
	return rep, nil
}

func nvbColumns(line string) ([]int, error) {
	f := strings.Fields(line)
	if len(f) == 0 || len(f) > maxNVBDevices {
		return nil, fmt.Errorf("column header %q: want the device indices", cut(line, 60))
	}
	cols := make([]int, len(f))
	for i, s := range f {
		c, err := strconv.Atoi(s)
		if err != nil || c < 0 {
			return nil, fmt.Errorf("column header %q: %q is not a device index", cut(line, 60), cut(s, 20))
		}
		cols[i] = c
	}
	return cols, nil
}

func nvbRow(line string, ncols int) (NVBRow, error) {
	f := strings.Fields(line)
	idx, err := strconv.Atoi(f[0])
	if err != nil || idx < 0 {
		return NVBRow{}, fmt.Errorf("row %q does not start with a device index", cut(line, 60))
	}
	if len(f)-1 != ncols {
		return NVBRow{}, fmt.Errorf("row %d has %d values for %d columns (truncated or garbled)", idx, len(f)-1, ncols)
	}
	row := NVBRow{Index: idx, Values: make([]float64, ncols)}
	for i, s := range f[1:] {
		if s == "N/A" {
			row.Values[i] = math.NaN()
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return NVBRow{}, fmt.Errorf("row %d column %d: %q is not a bandwidth", idx, i, cut(s, 20))
		}
		row.Values[i] = v
	}
	return row, nil
}

// NVBPair is one figure of a device-to-device matrix.
type NVBPair struct {
	Test     string
	Row, Col int
	GBps     float64
	matrix   int
	row      int
}

// MinDeviceToDevice is the smallest figure of every device_to_device test.
func (r *NVBReport) MinDeviceToDevice() (NVBPair, bool) {
	var best NVBPair
	found := false
	for mi, m := range r.Matrices {
		if !strings.HasPrefix(m.Test, "device_to_device") {
			continue
		}
		for ri, row := range m.Rows {
			for ci, v := range row.Values {
				if math.IsNaN(v) || ci >= len(m.Cols) {
					continue
				}
				if !found || v < best.GBps {
					best, found = NVBPair{Test: m.Test, Row: row.Index, Col: m.Cols[ci], GBps: v, matrix: mi, row: ri}, true
				}
			}
		}
	}
	return best, found
}

func (r *NVBReport) judge(minGBps float64, floor string) Verdict {
	p, ok := r.MinDeviceToDevice()
	if !ok {
		var tests []string
		for _, m := range r.Matrices {
			tests = append(tests, m.Test)
		}
		return Verdict{Outcome: v1alpha1.CheckError, Floor: floor,
			Message: fmt.Sprintf("nvbandwidth output has no device-to-device figure (tests run: %s); run device_to_device_memcpy_read_ce on a node with 2 or more GPUs", strings.Join(tests, ", "))}
	}
	m := r.Matrices[p.matrix]
	pair := fmt.Sprintf("GPU %d %s GPU %d", p.Row, nvbArrow(m.Header), p.Col)
	v := Verdict{Floor: floor, Value: gbps(p.GBps)}
	if p.GBps < minGBps {
		v.Outcome = v1alpha1.CheckFailed
		v.Message = fmt.Sprintf("smallest device-to-device bandwidth %s (%s, %s) is below the floor of %s", gbps(p.GBps), pair, p.Test, floor)
	} else {
		v.Outcome = v1alpha1.CheckPassed
		v.Message = fmt.Sprintf("smallest device-to-device bandwidth %s (%s, %s) reaches the floor of %s", gbps(p.GBps), pair, p.Test, floor)
	}
	lines := append([]string{}, m.lines[:min(3, len(m.lines))]...)
	lines = append(lines, m.lines[m.Rows[p.row].line])
	if s, ok := r.sumLines[p.Test]; ok {
		lines = append(lines, s)
	}
	v.Excerpt = excerpt(lines, MaxExcerpt)
	return v
}

// nvbArrow is the direction the header gives: "GPU(row) -> GPU(column)".
func nvbArrow(header string) string {
	for _, a := range []string{"<->", "->", "<-"} {
		if strings.Contains(header, a) {
			return a
		}
	}
	return "and"
}

// hasKey: a SUM for test k (bidirectional tests sum each direction:
// "<test>_read1", "<test>_total").
func hasKey(m map[string]float64, k string) bool {
	for s := range m {
		if strings.HasPrefix(s, k) {
			return true
		}
	}
	return false
}
