package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// The -o values, named as kubectl names them ("table" is kubectl's
// unnamed default).
const (
	outTable = "table"
	outWide  = "wide"
	outJSON  = "json"
	outYAML  = "yaml"
)

// listFormats are what every command that lists things takes.
var listFormats = []string{outTable, outWide, outJSON, outYAML}

// printer is the one -o/--output of a command: it checks the value before
// the command runs and writes JSON, YAML or the command's table.
type printer struct {
	format  string
	allowed []string
}

// addPrinter adds -o/--output (default table) taking one of allowed
// (listFormats when none is given) and checks it before cmd runs.
func addPrinter(cmd *cobra.Command, allowed ...string) *printer {
	if len(allowed) == 0 {
		allowed = listFormats
	}
	p := &printer{format: outTable, allowed: allowed}
	cmd.Flags().StringVarP(&p.format, "output", "o", outTable, "output format: "+strings.Join(allowed, ", "))
	next := cmd.PreRunE
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if err := p.validate(); err != nil {
			return err
		}
		if next != nil {
			return next(cmd, args)
		}
		return nil
	}
	return p
}

func (p *printer) validate() error {
	if p.format == "text" && slices.Contains(p.allowed, outTable) {
		p.format = outTable // the name model eval once used
	}
	if slices.Contains(p.allowed, p.format) {
		return nil
	}
	return fmt.Errorf("--output (-o) %q: want one of %s", p.format, strings.Join(p.allowed, ", "))
}

// structured: JSON or YAML, not a table for people.
func (p *printer) structured() bool { return p.format == outJSON || p.format == outYAML }

// print writes obj as JSON or YAML (from its JSON tags, as kubectl does),
// else calls table with whether the wide table is wanted.
func (p *printer) print(out io.Writer, obj any, table func(w io.Writer, wide bool) error) error {
	switch p.format {
	case outJSON:
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(obj)
	case outYAML:
		b, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("encoding YAML: %w", err)
		}
		_, err = out.Write(b)
		return err
	}
	return table(out, p.format == outWide)
}

// newTable is the tabwriter every table uses.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
