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

// NCCLMeasure is one half (out-of-place or in-place) of a table row.
type NCCLMeasure struct {
	TimeUs float64 `json:"timeUs"`
	AlgBW  float64 `json:"algBW"`
	BusBW  float64 `json:"busBW"`
	// Wrong is the #wrong count; -1 when the run did not check ("N/A",
	// or the float error column of old nccl-tests).
	Wrong int64 `json:"wrong"`
}

// NCCLRow is one message size of the nccl-tests table.
type NCCLRow struct {
	Size       int64       `json:"size"`
	Count      int64       `json:"count"`
	Type       string      `json:"type"`
	Redop      string      `json:"redop"`
	OutOfPlace NCCLMeasure `json:"outOfPlace"`
	InPlace    NCCLMeasure `json:"inPlace"`
	line       int
}

// NCCLReport is a parsed nccl-tests run.
type NCCLReport struct {
	// Ranks counts the "#  Rank  N … device …" lines.
	Ranks   int       `json:"ranks"`
	Devices []string  `json:"devices,omitempty"` // product names, in rank order
	Rows    []NCCLRow `json:"rows"`
	// AvgBusBW is the "# Avg bus bandwidth" figure in GB/s; HasAvg says
	// whether the line was there (a run cut short lacks it).
	AvgBusBW float64 `json:"avgBusBW"`
	HasAvg   bool    `json:"hasAvg"`
	// OutOfBounds is the "# Out of bounds values : N OK|FAILED" count.
	OutOfBounds   int64    `json:"outOfBounds"`
	OutOfBoundsOK bool     `json:"outOfBoundsOK"`
	HasOOB        bool     `json:"hasOutOfBounds"`
	lines         []string // without rank prefixes
	avgLine       int
	oobLine       int
}

// ncclPrefixRe matches what launchers put before each line: SkyPilot's
// "(head, rank=0, pid=1) ", Open MPI's --tag-output "[1,0]<stdout>:",
// srun -l's " 0: ".
var ncclPrefixRe = regexp.MustCompile(`^(?:\([^)]{0,200}\)\s*)?(?:\[\d+,\d+\]<std(?:out|err)>:|\s*\d+:(?:\s|$))?`)

var (
	ncclRankRe = regexp.MustCompile(`^#\s+Rank\s+(\d+)\s.*\bdevice\s+\d+\s+\[[^\]]*\]\s+(.+?)\s*$`)
	ncclAvgRe  = regexp.MustCompile(`^#\s*Avg bus bandwidth\s*:\s*(\S+)`)
	ncclOOBRe  = regexp.MustCompile(`^#\s*Out of bounds values\s*:\s*(\d+)\s+(\S+)`)
)

const maxNCCLRows = 4096

// ParseNCCL reads nccl-tests output (any *_perf test), with or without
// launcher prefixes, ignoring NCCL's INFO lines between.
func ParseNCCL(output []byte) (*NCCLReport, error) {
	rep := &NCCLReport{}
	sawHeader := false
	for n, raw := range splitLines(output) {
		line := strings.TrimRight(ncclPrefixRe.ReplaceAllString(raw, ""), " \t")
		rep.lines = append(rep.lines, line)
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "# nThread") || strings.Contains(trimmed, "#wrong") || strings.Contains(trimmed, "busbw"):
			sawHeader = true
		case ncclRankRe.MatchString(trimmed):
			m := ncclRankRe.FindStringSubmatch(trimmed)
			if rep.Ranks < maxResults {
				rep.Devices = append(rep.Devices, cut(m[2], 64))
			}
			rep.Ranks++
		case ncclAvgRe.MatchString(trimmed):
			m := ncclAvgRe.FindStringSubmatch(trimmed)
			v, err := strconv.ParseFloat(m[1], 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("nccl-tests line %d: Avg bus bandwidth %q is not a number of GB/s", n+1, cut(m[1], 40))
			}
			rep.AvgBusBW, rep.HasAvg, rep.avgLine = v, true, n
		case ncclOOBRe.MatchString(trimmed):
			m := ncclOOBRe.FindStringSubmatch(trimmed)
			c, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("nccl-tests line %d: out of bounds count %q is not a number", n+1, cut(m[1], 40))
			}
			rep.OutOfBounds, rep.OutOfBoundsOK, rep.HasOOB, rep.oobLine = c, m[2] == "OK", true, n
		case trimmed != "" && trimmed[0] >= '0' && trimmed[0] <= '9':
			if row, ok := parseNCCLRow(trimmed); ok && len(rep.Rows) < maxNCCLRows {
				row.line = n
				rep.Rows = append(rep.Rows, row)
			}
		}
	}
	if !sawHeader && len(rep.Rows) == 0 && !rep.HasAvg {
		return nil, errors.New(`not nccl-tests output: no "# nThread" header, no size/busbw table and no "# Avg bus bandwidth" line`)
	}
	if !rep.HasAvg {
		return nil, fmt.Errorf(`nccl-tests output has no "# Avg bus bandwidth" line (%d table rows read): the run was cut short or failed`, len(rep.Rows))
	}
	return rep, nil
}

// parseNCCLRow reads "size count type redop root time algbw busbw #wrong
// time algbw busbw #wrong"; nccl-tests before 2.10 had no root column.
func parseNCCLRow(s string) (NCCLRow, bool) {
	f := strings.Fields(s)
	var row NCCLRow
	var err error
	if row.Size, err = strconv.ParseInt(f[0], 10, 64); err != nil || len(f) < 12 {
		return row, false
	}
	if row.Count, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return row, false
	}
	row.Type, row.Redop = cut(f[2], 16), cut(f[3], 16)
	rest := f[4:]
	if len(f) >= 13 {
		rest = f[5:] // root
	}
	var ok1, ok2 bool
	row.OutOfPlace, ok1 = parseNCCLMeasure(rest[0:4])
	row.InPlace, ok2 = parseNCCLMeasure(rest[4:8])
	return row, ok1 && ok2
}

func parseNCCLMeasure(f []string) (NCCLMeasure, bool) {
	var m NCCLMeasure
	var vals [3]float64
	for i := range vals {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return m, false
		}
		vals[i] = v
	}
	m.TimeUs, m.AlgBW, m.BusBW = vals[0], vals[1], vals[2]
	m.Wrong = -1
	if w, err := strconv.ParseInt(f[3], 10, 64); err == nil {
		m.Wrong = w
	}
	return m, true
}

// Peak is the row with the highest bus bandwidth (in-place or out-of-place).
func (r *NCCLReport) Peak() (row NCCLRow, busBW float64, ok bool) {
	for _, x := range r.Rows {
		for _, b := range []float64{x.OutOfPlace.BusBW, x.InPlace.BusBW} {
			if !ok || b > busBW {
				row, busBW, ok = x, b, true
			}
		}
	}
	return row, busBW, ok
}

func (r *NCCLReport) judge(minGBps float64, floor string) Verdict {
	v := Verdict{Floor: floor, Value: gbps(r.AvgBusBW)}
	peak := ""
	if row, bw, ok := r.Peak(); ok {
		peak = fmt.Sprintf("peak busbw %.4g GB/s at %s", bw, bytesSize(row.Size))
	}
	ranks := ""
	if r.Ranks > 0 {
		ranks = fmt.Sprintf(", %d ranks", r.Ranks)
	}
	for _, row := range r.Rows {
		if row.OutOfPlace.Wrong > 0 || row.InPlace.Wrong > 0 {
			v.Outcome = v1alpha1.CheckFailed
			v.Message = fmt.Sprintf("wrong results at %s: %d out-of-place, %d in-place (#wrong); data was corrupted in transit",
				bytesSize(row.Size), max(row.OutOfPlace.Wrong, 0), max(row.InPlace.Wrong, 0))
			v.Excerpt = r.excerpt(row.line)
			return v
		}
	}
	if r.HasOOB && (!r.OutOfBoundsOK || r.OutOfBounds > 0) {
		v.Outcome = v1alpha1.CheckFailed
		v.Message = fmt.Sprintf("%d out of bounds values: nccl-tests found results outside the expected range", r.OutOfBounds)
		v.Excerpt = r.excerpt(-1)
		return v
	}
	if r.AvgBusBW < minGBps {
		v.Outcome = v1alpha1.CheckFailed
		v.Message = fmt.Sprintf("avg bus bandwidth %s is below the floor of %s (%s%s)", gbps(r.AvgBusBW), floor, peak, ranks)
	} else {
		v.Outcome = v1alpha1.CheckPassed
		v.Message = fmt.Sprintf("avg bus bandwidth %s reaches the floor of %s (%s%s)", gbps(r.AvgBusBW), floor, peak, ranks)
	}
	v.Excerpt = r.excerpt(-1)
	return v
}

// excerpt: the table header, the row that decided (if any), the last
// rows, the out-of-bounds and Avg lines; at most MaxExcerpt bytes, the
// summary lines first to make sure they fit.
func (r *NCCLReport) excerpt(decisive int) string {
	var summary []string
	if r.HasOOB {
		summary = append(summary, r.lines[r.oobLine])
	}
	summary = append(summary, r.lines[r.avgLine])
	var body []string
	if decisive >= 0 {
		body = append(body, r.lines[decisive])
	}
	for i := len(r.Rows) - 1; i >= 0 && i >= len(r.Rows)-6; i-- {
		if r.Rows[i].line != decisive {
			body = append([]string{r.lines[r.Rows[i].line]}, body...)
		}
	}
	budget := MaxExcerpt - len(strings.Join(summary, "\n")) - 1
	head := excerptTail(body, budget)
	if head == "" {
		return excerpt(summary, MaxExcerpt)
	}
	return head + "\n" + excerpt(summary, MaxExcerpt-len(head)-1)
}

// excerptTail keeps the last lines that fit in limit bytes.
func excerptTail(lines []string, limit int) string {
	n, size := len(lines), 0
	for n > 0 && size+len(lines[n-1])+1 <= limit {
		size += len(lines[n-1]) + 1
		n--
	}
	return strings.Join(lines[n:], "\n")
}

// bytesSize writes a message size as nccl-tests' -b/-e would: 8G, 512M, 1K.
func bytesSize(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return fmt.Sprintf("%d%sB", n/u.v, u.s)
		}
	}
	return fmt.Sprintf("%d B", n)
}
