package main

import (
	"io"
	"os"
	"strings"
	"testing"
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
