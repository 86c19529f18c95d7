package flagenv

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestApply(t *testing.T) {
	env := map[string]string{
		"GPUHEAL_NODE_NAME":       "from-env",
		"GPUHEAL_INTERVAL":        "30s",
		"GPUHEAL_METRICS_ADDRESS": "ignored-because-flag-given",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	node := fs.String("node-name", "", "")
	interval := fs.Duration("interval", 10*time.Second, "")
	addr := fs.String("metrics-address", ":9400", "")
	other := fs.String("other", "default", "")
	if err := fs.Parse([]string{"--metrics-address=:1234"}); err != nil {
		t.Fatal(err)
	}
	if err := Apply(fs, lookup); err != nil {
		t.Fatal(err)
	}
	if *node != "from-env" || *interval != 30*time.Second || *addr != ":1234" || *other != "default" {
		t.Fatalf("node=%q interval=%v addr=%q other=%q", *node, *interval, *addr, *other)
	}
}

func TestApplyNamesTheBadVariable(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.Duration("interval", time.Second, "")
	_ = fs.Parse(nil)
	err := Apply(fs, func(k string) (string, bool) { return "ten", k == "GPUHEAL_INTERVAL" })
	if err == nil || !strings.Contains(err.Error(), `GPUHEAL_INTERVAL="ten"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestUsageShowsVariable(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("node-name", "", "this node")
	Usage(fs)
	if got := fs.Lookup("node-name").Usage; got != "this node [$GPUHEAL_NODE_NAME]" {
		t.Fatalf("usage = %q", got)
	}
}
