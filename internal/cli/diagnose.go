package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuheal/gpuheal/internal/detect"
	"github.com/gpuheal/gpuheal/internal/diagnose"
	"github.com/gpuheal/gpuheal/internal/fabric"
	"github.com/gpuheal/gpuheal/internal/finding"
	"github.com/gpuheal/gpuheal/internal/gpu/smi"
	"github.com/gpuheal/gpuheal/internal/kmsg"
	"github.com/gpuheal/gpuheal/internal/xid"
)

type diagnoseOptions struct {
	kmsgPath  string
	fmPath    string
	smiPath   string
	out       *printer
	xidConfig string
	color     string
	// sysfs, rdmaDevices and instanceType: the fabric to check.
	sysfs        string
	rdmaDevices  int
	instanceType string
	checks       checkFlags
}

func newDiagnoseCommand(in io.Reader, out io.Writer) *cobra.Command {
	o := &diagnoseOptions{}
	cmd := &cobra.Command{
		Use:   "diagnose [--kmsg FILE|-] [--fm-log FILE] [--smi-xml FILE] [--sysfs DIR] | [--dcgm-diag FILE] [--nccl FILE] [--nvbandwidth FILE] [-o table|wide|json|yaml]",
		Short: "Triage a saved kernel log, nvidia-smi -q -x dump or health-gate check output, offline",
		Long: `Reads a kernel log (raw /dev/kmsg records, dmesg, dmesg -T, dmesg --time-format iso,
dmesg --decode, syslog or journal text; "-" for stdin), a Fabric Manager log
(/var/log/fabricmanager.log), an nvidia-smi -q -x dump and/or the RDMA devices
of a sysfs tree (--sysfs /sys on the node itself, or a copied one), and reports
what is wrong with the node's GPUs and fabric, worst first: a table
(-o wide is the same table), or the report as JSON or YAML.

Or judges saved outputs of the health gate's checks as the controller would:
--dcgm-diag (dcgmi diag -r N, JSON from -j or the text table; --dcgm-level N
names the level), --nccl (nccl-tests, rank prefixes allowed) and --nvbandwidth,
both against --min-gbps.

Exit status: 0 nothing above info (every check passed), 1 warnings, 2 fatal
findings (a check failed), 4 unreadable input (a check output says nothing).`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if o.checks.any() {
				return runDiagnoseChecks(out, o)
			}
			if o.kmsgPath == "" && o.fmPath == "" && o.smiPath == "" && o.sysfs == "" {
				return &ExitError{Code: diagnose.ExitUnreadable, Err: errors.New("nothing to diagnose: give --kmsg FILE|-, --fm-log FILE, --smi-xml FILE and/or --sysfs DIR, or --dcgm-diag, --nccl or --nvbandwidth FILE")}
			}
			return runDiagnose(in, out, o)
		},
	}
	cmd.Flags().StringVar(&o.kmsgPath, "kmsg", "", "kernel log file, or - for stdin")
	cmd.Flags().StringVar(&o.fmPath, "fm-log", "", "NVIDIA Fabric Manager log file (fabricmanager.log; its stamps are read in the local zone)")
	cmd.Flags().StringVar(&o.smiPath, "smi-xml", "", "nvidia-smi -q -x output file")
	cmd.Flags().StringVar(&o.sysfs, "sysfs", "", "a sysfs tree whose class/infiniband RDMA devices to check (/sys on the node)")
	cmd.Flags().IntVar(&o.rdmaDevices, "expected-rdma-devices", 0, "with --sysfs: RDMA devices the node should have (0: the instance type's count when --instance-type names one, else unknown)")
	cmd.Flags().StringVar(&o.instanceType, "instance-type", "", "with --sysfs: the node's instance type (p5.48xlarge: 32 EFA devices)")
	cmd.Flags().StringVar(&o.checks.dcgmPath, "dcgm-diag", "", "saved dcgmi diag output (JSON from -j, or the text table)")
	cmd.Flags().IntVar(&o.checks.dcgmLevel, "dcgm-level", 0, "the -r level the DCGM output was run at (shown as its floor)")
	cmd.Flags().StringVar(&o.checks.ncclPath, "nccl", "", "saved nccl-tests output (all_reduce_perf and friends)")
	cmd.Flags().StringVar(&o.checks.nvbPath, "nvbandwidth", "", "saved nvbandwidth output")
	cmd.Flags().Float64Var(&o.checks.minGBps, "min-gbps", 0, "floor in GB/s: --nccl's Avg bus bandwidth, --nvbandwidth's smallest device-to-device figure")
	o.out = addPrinter(cmd)
	cmd.Flags().StringVar(&o.xidConfig, "xid-config", "", "YAML of Xid catalog overrides (severity, action, count, window per code)")
	cmd.Flags().StringVar(&o.color, "color", "auto", "color the table: auto (on a terminal), always or never")
	return cmd
}

func runDiagnose(in io.Reader, out io.Writer, o *diagnoseOptions) error {
	cat, err := xid.LoadFile(o.xidConfig)
	if err != nil {
		return &ExitError{Code: diagnose.ExitUnreadable, Err: err}
	}
	rep := &diagnose.Report{}
	if o.kmsgPath != "" {
		if err := diagnoseKmsg(rep, in, o.kmsgPath, cat); err != nil {
			return &ExitError{Code: diagnose.ExitUnreadable, Err: err}
		}
	}
	if o.fmPath != "" {
		if err := diagnoseFM(rep, o.fmPath); err != nil {
			return &ExitError{Code: diagnose.ExitUnreadable, Err: err}
		}
	}
	if o.smiPath != "" {
		if err := diagnoseSMI(rep, o.smiPath); err != nil {
			return &ExitError{Code: diagnose.ExitUnreadable, Err: err}
		}
	}
	if o.sysfs != "" {
		if err := diagnoseSysfs(rep, o); err != nil {
			return &ExitError{Code: diagnose.ExitUnreadable, Err: err}
		}
	}
	rep.Sort()
	if rep.Findings == nil {
		rep.Findings = []diagnose.Group{}
	}
	err = o.out.print(out, rep, func(w io.Writer, _ bool) error { return diagnose.WriteTable(w, rep, useColor(o.color, w)) })
	if err != nil {
		return err
	}
	if code := rep.ExitCode(); code != diagnose.ExitClean {
		return &ExitError{Code: code, Err: errSilent}
	}
	return nil
}

func diagnoseKmsg(rep *diagnose.Report, stdin io.Reader, path string, cat xid.Catalog) error {
	r, name := stdin, "stdin"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("opening kernel log: %w", err)
		}
		defer func() { _ = f.Close() }()
		r, name = f, path
	}
	// Every record's message is a short-lived string and the live heap is
	// a few groups: collecting at 4× the live heap instead of 2× takes a
	// quarter off the CPU per line and keeps memory flat in the log's
	// length (hack/bench-diagnose.sh; docs/benchmarks.md).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	det := detect.New(cat, detect.Options{})
	var buf []finding.Finding
	return readRecords(rep, r, name, "kernel log", func(rec kmsg.Record) []finding.Finding {
		if rec.Facility > 0 {
			return nil // user space wrote it to /dev/kmsg: not the kernel's words
		}
		buf = det.Append(buf[:0], rec.Message, rec.Time)
		return buf
	})
}

// diagnoseFM reads a Fabric Manager log with the kernel log's reader, as
// the agent's follower of the file does: each line comes whole, bounded
// in length, and the detector reads its stamp.
func diagnoseFM(rep *diagnose.Report, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening Fabric Manager log: %w", err)
	}
	defer func() { _ = f.Close() }()
	det := detect.NewFabricManager(detect.FMOptions{})
	var buf []finding.Finding
	return readRecords(rep, f, path, "Fabric Manager log", func(rec kmsg.Record) []finding.Finding {
		buf = det.Append(buf[:0], rec.Message)
		return buf
	})
}

// readRecords feeds every record of r to detect and adds its findings and
// the input's counts to rep.
func readRecords(rep *diagnose.Report, r io.Reader, name, what string, detect func(kmsg.Record) []finding.Finding) error {
	rd := kmsg.NewReader(r, kmsg.Options{})
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading %s %s: %w", what, name, err)
		}
		for _, f := range detect(rec) {
			rep.Add(f)
		}
	}
	st := rd.Stats()
	rep.Inputs = append(rep.Inputs, diagnose.InputStats{File: name, Lines: st.Lines, Records: st.Records,
		Skipped: st.Skipped, TooLong: st.TooLong, InvalidUTF8: st.InvalidUTF8})
	return nil
}

func diagnoseSMI(rep *diagnose.Report, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening nvidia-smi dump: %w", err)
	}
	defer func() { _ = f.Close() }()
	snap, err := smi.Parse(f)
	if err != nil {
		return fmt.Errorf("nvidia-smi dump %s: %w", path, err)
	}
	for _, f := range diagnose.SnapshotFindings(snap, "smi") {
		rep.Add(f)
	}
	rep.GPUs = snap.GPUs
	rep.Node = &diagnose.NodeSummary{DriverVersion: snap.DriverVersion, CUDADriverVersion: snap.CUDADriverVersion, FoundGPUs: snap.FoundGPUs}
	return nil
}

func useColor(mode string, out io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := out.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// diagnoseSysfs reads the RDMA devices of a sysfs tree once.
func diagnoseSysfs(rep *diagnose.Report, o *diagnoseOptions) error {
	if _, err := os.Stat(o.sysfs); err != nil {
		return fmt.Errorf("--sysfs: %w", err)
	}
	expected := o.rdmaDevices
	if expected == 0 {
		expected = fabric.ExpectedDevices(o.instanceType)
	}
	snap, err := fabric.Read(context.Background(), fabric.ReadOptions{Root: o.sysfs, ExpectedDevices: expected})
	if err != nil {
		return fmt.Errorf("reading RDMA devices under %s: %w", o.sysfs, err)
	}
	for _, f := range diagnose.FabricFindings(snap, "sysfs", time.Now()) {
		rep.Add(f)
	}
	return nil
}
