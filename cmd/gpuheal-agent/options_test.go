package main

import (
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/simfleet"
)

// --driver-root follows every other flag: a default, a GPUHEAL_ variable
// for when the flag is not given, and the flag winning over it.
func TestDriverRootOption(t *testing.T) {
	base := []string{"--standalone", "--gpu-backend=nvml"}
	for _, tc := range []struct {
		name, env string
		args      []string
		want      string
	}{
		{"default is the loader's search", "", nil, "/"},
		{"flag", "", []string{"--driver-root=/run/nvidia/driver"}, "/run/nvidia/driver"},
		{"environment", "/host/driver", nil, "/host/driver"},
		{"flag wins", "/host/driver", []string{"--driver-root=/run/nvidia/driver"}, "/run/nvidia/driver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GPUHEAL_DRIVER_ROOT", tc.env) // restored after the test
			if tc.env == "" {
				_ = os.Unsetenv("GPUHEAL_DRIVER_ROOT")
			}
			o, _, err := parseOptions(append(base, tc.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if o.agent.DriverRoot != tc.want {
				t.Errorf("DriverRoot = %q, want %q", o.agent.DriverRoot, tc.want)
			}
		})
	}
	_, _, err := parseOptions(append(base, "--driver-root=run/nvidia/driver"), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--driver-root") {
		t.Errorf("relative root: %v, want an error naming --driver-root", err)
	}
}

// --help is for operators of real nodes: it shows no simulator flag, and
// those flags still parse, from the command line and the environment.
func TestHelpHidesTheSimulatorFlags(t *testing.T) {
	var help strings.Builder
	_, _, err := parseOptions([]string{"--help"}, &help)
	if !errors.Is(err, pflag.ErrHelp) {
		t.Fatalf("--help: %v, want pflag.ErrHelp", err)
	}
	if !strings.Contains(help.String(), "--gpu-backend") || !strings.Contains(help.String(), "--node-name") {
		t.Fatalf("help lacks the ordinary flags:\n%s", help.String())
	}
	if strings.Contains(help.String(), "--sim-") {
		t.Errorf("help shows simulator flags:\n%s", help.String())
	}

	t.Setenv("GPUHEAL_SIM_FLEET_SEED", "9")
	o, _, err := parseOptions([]string{"--gpu-backend=sim", "--sim-fleet", "--sim-fleet-faults-per-minute=2",
		"--sim-fleet-epoch=2026-03-01T00:00:00Z", "--sim-gpus=4", "--sim-schedule=faults.yaml"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !o.fleet.Enabled || o.fleet.FaultsPerMinute != 2 || o.fleet.Seed != 9 || o.fleet.Epoch.IsZero() ||
		o.agent.Sim.GPUs != 4 || o.agent.Sim.ScheduleFile != "faults.yaml" {
		t.Errorf("hidden flags did not parse: fleet %+v, sim %+v", o.fleet, o.agent.Sim)
	}
	if _, _, err := parseOptions([]string{"--sim-fleet", "--standalone", "--gpu-backend=sim"}, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "--sim-fleet needs a cluster") {
		t.Errorf("--sim-fleet --standalone: %v", err)
	}
}

// TestConditionTypesOption: gpuheal's own names by default, the EKS names
// on opt-in, and a clear error for anything else.
func TestConditionTypesOption(t *testing.T) {
	base := []string{"--standalone", "--gpu-backend=nvml"}
	o, _, err := parseOptions(base, io.Discard)
	if err != nil || o.agent.ConditionTypes != "gpuheal" {
		t.Errorf("default: %q, %v; want gpuheal", o.agent.ConditionTypes, err)
	}
	if o, _, err = parseOptions(append(base, "--condition-types=eks"), io.Discard); err != nil || o.agent.ConditionTypes != "eks" {
		t.Errorf("--condition-types=eks: %v", err)
	}
	_, _, err = parseOptions(append(base, "--condition-types=EKS"), io.Discard)
	if err == nil || err.Error() != `--condition-types "EKS": want gpuheal or eks` {
		t.Errorf("--condition-types=EKS: %v", err)
	}
}

// TestHealthGateOptions: the checks report every 30s and no join taint by
// default; both from flags (and so from GPUHEAL_* variables).
func TestHealthGateOptions(t *testing.T) {
	base := []string{"--standalone", "--gpu-backend=nvml"}
	o, _, err := parseOptions(base, io.Discard)
	if err != nil || o.agent.AgentChecksInterval != 30*time.Second || o.agent.JoinGate {
		t.Errorf("default: %v, join gate %v, %v; want 30s, false", o.agent.AgentChecksInterval, o.agent.JoinGate, err)
	}
	o, _, err = parseOptions(append(base, "--agent-checks-interval=0", "--join-gate"), io.Discard)
	if err != nil || o.agent.AgentChecksInterval != 0 || !o.agent.JoinGate {
		t.Errorf("--agent-checks-interval=0 --join-gate: %+v, %v", o.agent, err)
	}
	_, _, err = parseOptions(append(base, "--agent-checks-interval=10ms"), io.Discard)
	if err == nil || err.Error() != "--agent-checks-interval 10ms: must be 0 (off) or at least 1s" {
		t.Errorf("--agent-checks-interval=10ms: %v", err)
	}
}

// The check Job flags of the sim fleet: durations per kind over the
// defaults, a bad kind or pace refused with the flag's name.
func TestSimFleetCheckFlags(t *testing.T) {
	o, _, err := parseOptions([]string{"--gpu-backend=sim", "--sim-fleet", "--sim-fleet-check-durations=NCCL=20s",
		"--sim-fleet-check-speed=4", "--sim-fleet-latent-surface-after=2m", "--sim-fleet-check-jobs-managed-by=gpuheal.io/sim-fleet"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	f := o.fleet
	if !f.AnswerChecks || f.CheckDurations[v1alpha1.CheckNCCL] != 20*time.Second || f.CheckDurations[v1alpha1.CheckDCGM] != 3*time.Minute ||
		f.CheckSpeed != 4 || f.LatentSurfaceAfter != 2*time.Minute || f.CheckJobsManagedBy != "gpuheal.io/sim-fleet" || f.CheckPoll != time.Second {
		t.Errorf("check flags parsed as %+v", f)
	}
	for args, want := range map[string]string{
		"--sim-fleet-check-durations=Agent=1m": `unknown check kind "Agent"`,
		"--sim-fleet-check-durations=DCGM=0s":  `DCGM="0s": want a positive duration`,
		"--sim-fleet-check-speed=0":            "--sim-fleet-check-speed 0: must be above 0",
	} {
		if _, _, err := parseOptions([]string{"--gpu-backend=sim", "--sim-fleet", args}, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", args, err, want)
		}
	}
}

// The fleet's nodes get the fabric of their instance type unless told
// otherwise; an unknown fabric is refused with the flag's name.
func TestSimFleetFabricFlag(t *testing.T) {
	for args, want := range map[string]string{"": simfleet.FabricAuto, "--sim-fleet-fabric=infiniband": simfleet.FabricInfiniBand,
		"--sim-fleet-fabric=efa": simfleet.FabricEFA, "--sim-fleet-fabric=none": simfleet.FabricNone} {
		o, _, err := parseOptions(slices.DeleteFunc([]string{"--gpu-backend=sim", "--sim-fleet", args}, func(s string) bool { return s == "" }), io.Discard)
		if err != nil || o.fleet.Fabric != want {
			t.Errorf("%q: fabric %q, %v; want %q", args, o.fleet.Fabric, err, want)
		}
	}
	if _, _, err := parseOptions([]string{"--gpu-backend=sim", "--sim-fleet", "--sim-fleet-fabric=omnipath"}, io.Discard); err == nil ||
		!strings.Contains(err.Error(), `--sim-fleet-fabric "omnipath": want auto, infiniband, efa or none`) {
		t.Errorf("--sim-fleet-fabric=omnipath: %v", err)
	}
}
