// Package cli is the gpuheal command line: the operator's window on the
// fleet. The same binary works as a kubectl plugin (kubectl-gpuheal), so it
// takes kubectl's cluster flags (--kubeconfig, --context, -n, ...), one
// -o table|wide|json|yaml on every command that lists things, and node
// names as arguments.
package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/gpuheal/gpuheal/internal/logging"
	"github.com/gpuheal/gpuheal/internal/version"
)

type globalOptions struct {
	log logging.Options
}

// NewRoot builds the command tree reading in and writing to out and errOut.
func NewRoot(in io.Reader, out, errOut io.Writer) *cobra.Command {
	return newRoot(in, out, errOut, newCluster())
}

// newRoot takes the cluster seam, so that tests can give a fake client.
func newRoot(in io.Reader, out, errOut io.Writer, k *cluster) *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:           "gpuheal",
		Short:         "Self-healing GPU nodes for Kubernetes",
		Long:          "gpuheal finds sick GPU nodes, takes them out of service safely, has them rebooted or replaced, and keeps a record.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Version,
		PersistentPreRunE: func(_ *cobra.Command, _ []string) error {
			_, err := logging.Setup(errOut, g.log)
			return err
		},
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetIn(in)
	root.PersistentFlags().StringVar(&g.log.Format, "log-format", "text", "log format: json or text")
	root.PersistentFlags().StringVar(&g.log.Level, "log-level", "info", "log level: debug, info, warn or error")
	// kubectl's own cluster flags, global as in kubectl: commands that
	// read no cluster ignore them.
	k.addFlags(root.PersistentFlags())
	root.AddCommand(newDevCommand(out), newDiagnoseCommand(in, out), newIncidentsCommand(out, k), newScoreCommand(out, k),
		newAuditCommand(out, k), newStatusCommand(out, k), newDescribeCommand(out, k), newDemoCommand(out), newSoakCommand(out),
		newModelCommand(out), newSimCommand(out), newUncordonCommand(out, k), newFleetCommand(out, k))
	return root
}

// Execute runs the CLI and returns the error to report.
func Execute(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) error {
	return execute(ctx, NewRoot(in, out, errOut), args)
}

func execute(ctx context.Context, root *cobra.Command, args []string) error {
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		if Silent(err) {
			return err
		}
		return fmt.Errorf("gpuheal: %w", err)
	}
	return nil
}

func logger() *slog.Logger { return slog.Default() }
