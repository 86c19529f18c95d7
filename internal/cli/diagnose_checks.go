package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/diagnose"
	"github.com/gpuheal/gpuheal/internal/termsafe"
	"github.com/gpuheal/gpuheal/internal/validation"
)

// checkFlags are diagnose's inputs from the health gate's active checks.
type checkFlags struct {
	dcgmPath, ncclPath, nvbPath string
	dcgmLevel                   int
	minGBps                     float64
}

func (c *checkFlags) any() bool { return c.dcgmPath != "" || c.ncclPath != "" || c.nvbPath != "" }

// maxCheckOutput bounds what is read of a saved output: real ones are a
// few hundred KiB at most, even with NCCL's INFO lines.
const maxCheckOutput = 64 << 20

// checkReport is diagnose's report on saved check outputs (-o json|yaml).
type checkReport struct {
	Checks []checkVerdict `json:"checks"`
}

type checkVerdict struct {
	Kind v1alpha1.CheckKind `json:"kind"`
	File string             `json:"file"`
	validation.Verdict
}

// runDiagnoseChecks judges each saved output the way the health gate
// would. Exit status: 0 all passed, 2 one fell short, 4 one says nothing
// (unreadable, truncated, not the tool's output).
func runDiagnoseChecks(out io.Writer, o *diagnoseOptions) error {
	if o.kmsgPath != "" || o.fmPath != "" || o.smiPath != "" {
		return &ExitError{Code: diagnose.ExitUnreadable, Err: errors.New("--dcgm-diag, --nccl and --nvbandwidth are diagnosed on their own: leave out --kmsg, --fm-log and --smi-xml")}
	}
	if o.checks.minGBps < 0 {
		return &ExitError{Code: diagnose.ExitUnreadable, Err: fmt.Errorf("--min-gbps %v: want a bandwidth of 0 or more GB/s", o.checks.minGBps)}
	}
	rep := checkReport{Checks: []checkVerdict{}}
	inputs := []struct {
		kind  v1alpha1.CheckKind
		what  string
		path  string
		judge func([]byte) validation.Verdict
	}{
		{v1alpha1.CheckDCGM, "DCGM diag output", o.checks.dcgmPath, func(b []byte) validation.Verdict { return validation.JudgeDCGM(b, o.checks.dcgmLevel) }},
		{v1alpha1.CheckNCCL, "nccl-tests output", o.checks.ncclPath, func(b []byte) validation.Verdict { return validation.JudgeNCCL(b, o.checks.minGBps) }},
		{v1alpha1.CheckNVBandwidth, "nvbandwidth output", o.checks.nvbPath, func(b []byte) validation.Verdict { return validation.JudgeNVBandwidth(b, o.checks.minGBps) }},
	}
	for _, in := range inputs {
		if in.path == "" {
			continue
		}
		b, err := readCheckOutput(in.path)
		if err != nil {
			return &ExitError{Code: diagnose.ExitUnreadable, Err: fmt.Errorf("%s %s: %w", in.what, in.path, err)}
		}
		v := in.judge(b)
		if v.Outcome == v1alpha1.CheckError {
			v.Message = fmt.Sprintf("%s: %s", in.path, v.Message)
		}
		rep.Checks = append(rep.Checks, checkVerdict{Kind: in.kind, File: in.path, Verdict: v})
	}
	if err := o.out.print(out, rep, func(w io.Writer, _ bool) error { return writeCheckTable(w, rep) }); err != nil {
		return err
	}
	code := diagnose.ExitClean
	for _, c := range rep.Checks {
		switch {
		case c.Outcome == v1alpha1.CheckError:
			code = diagnose.ExitUnreadable
		case c.Outcome == v1alpha1.CheckFailed && code == diagnose.ExitClean:
			code = diagnose.ExitFatal
		}
	}
	if code != diagnose.ExitClean {
		return &ExitError{Code: code, Err: errSilent}
	}
	return nil
}

func readCheckOutput(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxCheckOutput+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxCheckOutput {
		return nil, fmt.Errorf("larger than %d MiB: not a saved check output", maxCheckOutput>>20)
	}
	return b, nil
}

// writeCheckTable prints one line per check, then each check's excerpt
// indented under its name; the output came from a node, so every byte of
// it is cleaned for the terminal.
func writeCheckTable(w io.Writer, rep checkReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tOUTCOME\tVALUE\tFLOOR\tMESSAGE")
	for _, c := range rep.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Kind, c.Outcome, orDashCLI(termsafe.Line(c.Value)), orDashCLI(c.Floor), termsafe.Line(c.Message))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range rep.Checks {
		if c.Excerpt == "" {
			continue
		}
		fmt.Fprintf(w, "\n%s excerpt (%s):\n", c.Kind, termsafe.Line(c.File))
		for _, l := range strings.Split(termsafe.Clean(c.Excerpt), "\n") {
			fmt.Fprintln(w, "  "+l)
		}
	}
	return nil
}

func orDashCLI(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
