package agent

import (
	"strings"
	"testing"
	"time"
)

func validOptions() Options {
	return Options{
		Backend: BackendSim, Interval: 10 * time.Second, CallTimeout: 2 * time.Second,
		Output: "json", Standalone: true, Sim: SimOptions{GPUs: 8}, KmsgPoll: time.Second, GCPercent: 25,
	}
}

func TestValidateNamesTheBadOption(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{"backend", func(o *Options) { o.Backend = "cuda" }, `--gpu-backend "cuda"`},
		{"interval", func(o *Options) { o.Interval = 10 * time.Millisecond }, "--interval 10ms"},
		{"call timeout not shorter than interval", func(o *Options) { o.CallTimeout = 10 * time.Second }, "--call-timeout 10s"},
		{"expected gpus", func(o *Options) { o.ExpectedGPUs = -1 }, "--expected-gpus -1"},
		{"driver root relative", func(o *Options) { o.DriverRoot = "run/nvidia/driver" }, `--driver-root "run/nvidia/driver"`},
		{"once without standalone", func(o *Options) { o.Standalone = false; o.Once = true; o.NodeName = "n" }, "--once needs --standalone"},
		{"output", func(o *Options) { o.Output = "yaml" }, `--output "yaml"`},
		{"gc percent", func(o *Options) { o.GCPercent = 0 }, "--gc-percent 0"},
		{"agent checks interval", func(o *Options) { o.AgentChecksInterval = 500 * time.Millisecond }, "--agent-checks-interval 500ms"},
		{"node name in cluster", func(o *Options) { o.Standalone = false }, "--node-name is required"},
		{"push gateway url", func(o *Options) { o.PushGateway = "pushgw:9091" }, `--push-gateway "pushgw:9091"`},
		{"push interval", func(o *Options) { o.PushGateway = "http://pg:9091"; o.PushInterval = 0 }, "--push-interval 0s"},
		{"sim gpus", func(o *Options) { o.Sim.GPUs = 9 }, "--sim-gpus 9"},
		{"predictor mode", func(o *Options) { o.Predictor.Mode = "yes" }, `--predictor "yes"`},
		{"predictor threshold above 1", func(o *Options) { o.Predictor.Threshold = 1.5 }, "--predictor-threshold 1.5"},
		{"predictor threshold negative", func(o *Options) { o.Predictor.Threshold = -0.1 }, "--predictor-threshold -0.1"},
		{"kmsg poll", func(o *Options) { o.KmsgPath = "/dev/kmsg"; o.KmsgPoll = 0 }, "--kmsg-poll-interval 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := validOptions()
			tc.mutate(&o)
			err := o.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	o := validOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("valid options rejected: %v", err)
	}
}
