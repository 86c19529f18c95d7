package diagnose

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/termsafe"
)

// ANSI colors for a terminal; plain text otherwise.
const (
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	dim    = "\x1b[2m"
	reset  = "\x1b[0m"
)

// WriteTable prints one line per finding, worst first (call Sort first).
func WriteTable(w io.Writer, r *Report, color bool) error {
	if len(r.Findings) == 0 {
		fmt.Fprintln(w, "no findings")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(r.Findings) > 0 {
		// DEVICE is the GPU, or for the fabric's findings the adapter or
		// switch: which part to look at, in one column.
		fmt.Fprintln(tw, "SEVERITY\tACTION\tCODE\tDEVICE\tCOUNT\tFIRST\tLAST\tMESSAGE")
	}
	for _, g := range r.Findings {
		sev := string(g.Severity)
		if color {
			sev = paint(g.Severity) + sev + reset
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", sev, g.Action, g.Code, orDash(cmp.Or(g.GPU, g.Device)), g.Count,
			stamp(g.First), stamp(g.Last), oneLine(termsafe.Line(g.Message), 100))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, in := range r.Inputs {
		if in.Skipped+in.TooLong+in.InvalidUTF8 > 0 {
			fmt.Fprintf(w, "%s: %d lines, %d records; skipped %d unparsable, %d too long; %d with invalid UTF-8\n",
				in.File, in.Lines, in.Records, in.Skipped, in.TooLong, in.InvalidUTF8)
		}
	}
	return nil
}

func paint(s finding.Severity) string {
	switch s {
	case finding.Fatal:
		return red
	case finding.Warning, finding.Unknown:
		return yellow
	}
	return dim
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps the table one row per finding: multi-line kernel messages
// are folded and long ones cut.
func oneLine(s string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > width {
		return string(r[:width-1]) + "…"
	}
	return s
}
