// Package flagenv lets every flag of a gpuheal binary be set from the
// environment: --node-name ⇔ GPUHEAL_NODE_NAME. A flag given on the command
// line wins over its variable.
package flagenv

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// Prefix starts every variable name.
const Prefix = "GPUHEAL_"

// VarName is the environment variable that mirrors the flag name.
func VarName(flag string) string {
	return Prefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Apply sets each flag of fs that was not given on the command line from its
// variable in env (os.LookupEnv when nil). Errors name the variable and value.
func Apply(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		name := VarName(f.Name)
		v, ok := lookup(name)
		if !ok {
			return
		}
		if setErr := fs.Set(f.Name, v); setErr != nil {
			err = fmt.Errorf("environment variable %s=%q: %w", name, v, setErr)
		}
	})
	return err
}

// Usage appends the environment variable to every flag's help text, so
// --help shows both spellings.
func Usage(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		f.Usage = fmt.Sprintf("%s [$%s]", f.Usage, VarName(f.Name))
	})
}
