package host

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

const (
	procVersion = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023\n"
	osRelease   = "6.8.0-1015-aws\n"
)

// tree writes files (path → content) under a new temp root; a path ending
// in "/" makes an empty directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if p[len(p)-1] == '/' {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func base(extra map[string]string) map[string]string {
	m := map[string]string{
		"proc/driver/nvidia/version": procVersion,
		"proc/sys/kernel/osrelease":  osRelease,
		"dev/nvidiactl":              "",
		"dev/nvidia-uvm":             "",
		"dev/nvidia0":                "",
		"dev/nvidia1":                "",
		"dev/null":                   "",
		"dev/nvidia-caps/":           "",
		"proc/1/comm":                "systemd\n",
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func TestProbe(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		opts      Options
		want      Facts
		wantQuery []string
	}{
		{
			name:  "PCIe node without NVSwitch",
			files: base(nil),
			want: Facts{
				KernelModuleVersion: "535.54.03",
				KernelRelease:       "6.8.0-1015-aws",
				DeviceNodes:         []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia-uvm", "/dev/nvidiactl"},
			},
		},
		{
			name: "HGX with fabric manager running",
			files: base(map[string]string{
				"dev/nvidia10":           "",
				"dev/nvidia2":            "",
				"dev/nvidia-nvswitch0":   "",
				"dev/nvidia-nvswitchctl": "",
				"proc/4242/comm":         "nv-fabricmanage\n",
				"proc/self/comm":         "gpuheal-agent\n",
			}),
			want: Facts{
				KernelModuleVersion: "535.54.03",
				KernelRelease:       "6.8.0-1015-aws",
				DeviceNodes: []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia10",
					"/dev/nvidia-nvswitch0", "/dev/nvidia-nvswitchctl", "/dev/nvidia-uvm", "/dev/nvidiactl"},
				NVSwitch:      true,
				FabricManager: FabricManagerRunning,
			},
		},
		{
			name: "NVSwitch from procfs, fabric manager installed but stopped",
			files: base(map[string]string{
				"proc/driver/nvidia-nvswitch/devices/0000:05:00.0": "",
				"usr/bin/nv-fabricmanager":                         "#!",
			}),
			want: Facts{
				KernelModuleVersion: "535.54.03",
				KernelRelease:       "6.8.0-1015-aws",
				DeviceNodes:         []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia-uvm", "/dev/nvidiactl"},
				NVSwitch:            true,
				FabricManager:       FabricManagerStopped,
			},
		},
		{
			name: "nvswitchctl alone is no NVSwitch",
			files: base(map[string]string{
				"dev/nvidia-nvswitchctl":               "",
				"proc/driver/nvidia-nvswitch/devices/": "",
			}),
			want: Facts{
				KernelModuleVersion: "535.54.03",
				KernelRelease:       "6.8.0-1015-aws",
				DeviceNodes:         []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia-nvswitchctl", "/dev/nvidia-uvm", "/dev/nvidiactl"},
			},
		},
		{
			name: "fabric manager not installed, custom path list",
			files: base(map[string]string{
				"dev/nvidia-nvswitch3":     "",
				"usr/bin/nv-fabricmanager": "#!",
			}),
			opts: Options{FabricManagerPaths: []string{"/opt/nvidia/nv-fabricmanager"}},
			want: Facts{
				KernelModuleVersion: "535.54.03",
				KernelRelease:       "6.8.0-1015-aws",
				DeviceNodes:         []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia-nvswitch3", "/dev/nvidia-uvm", "/dev/nvidiactl"},
				NVSwitch:            true,
				FabricManager:       FabricManagerNotInstalled,
			},
		},
		{
			name: "open module",
			files: base(map[string]string{
				"proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16)  Tue Mar  5 UTC 2024\n",
			}),
			want: Facts{
				KernelModuleVersion: "550.54.15",
				KernelModuleOpen:    true,
				KernelRelease:       "6.8.0-1015-aws",
				DeviceNodes:         []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia-uvm", "/dev/nvidiactl"},
			},
		},
		{
			name: "driver not loaded: no version file, no device nodes",
			files: map[string]string{
				"proc/sys/kernel/osrelease": osRelease,
				"dev/null":                  "",
			},
			want:      Facts{KernelRelease: "6.8.0-1015-aws"},
			wantQuery: []string{"kernel-module-version"},
		},
		{
			name:      "nothing mounted",
			files:     map[string]string{"etc/hostname": "x"},
			wantQuery: []string{"kernel-module-version", "kernel-release", "device-nodes"},
		},
		{
			name: "garbled version file",
			files: base(map[string]string{
				"proc/driver/nvidia/version": "NVRM version: garbage\n",
			}),
			want: Facts{
				KernelRelease: "6.8.0-1015-aws",
				DeviceNodes:   []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia-uvm", "/dev/nvidiactl"},
			},
			wantQuery: []string{"kernel-module-version"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Root = tree(t, tt.files)
			got, errs := Probe(opts)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("facts (-want +got):\n%s", diff)
			}
			var queries []string
			for _, e := range errs {
				queries = append(queries, e.Query)
			}
			if diff := cmp.Diff(tt.wantQuery, queries); diff != "" {
				t.Errorf("error queries (-want +got):\n%s\nerrors: %v", diff, errs)
			}
		})
	}
}

func TestProbeSeparateMounts(t *testing.T) {
	proc := tree(t, map[string]string{
		"driver/nvidia/version": procVersion,
		"sys/kernel/osrelease":  osRelease,
	})
	dev := tree(t, map[string]string{"nvidia0": "", "nvidia-nvswitch0": ""})
	got, errs := Probe(Options{
		Root:               t.TempDir(),
		ProcFS:             proc,
		DevFS:              dev,
		FabricManagerState: func() (string, error) { return FabricManagerRunning, nil },
	})
	want := Facts{
		KernelModuleVersion: "535.54.03",
		KernelRelease:       "6.8.0-1015-aws",
		DeviceNodes:         []string{"/dev/nvidia0", "/dev/nvidia-nvswitch0"},
		NVSwitch:            true,
		FabricManager:       FabricManagerRunning,
	}
	if diff := cmp.Diff(want, got); diff != "" || len(errs) != 0 {
		t.Errorf("facts (-want +got):\n%s\nerrors: %v", diff, errs)
	}
}

func TestFabricManagerSeamError(t *testing.T) {
	root := tree(t, base(map[string]string{"dev/nvidia-nvswitch0": ""}))
	_, errs := Probe(Options{
		Root:               root,
		FabricManagerState: func() (string, error) { return "", errors.New("systemd unreachable") },
	})
	if len(errs) != 1 || errs[0].Query != "fabric-manager" {
		t.Fatalf("errors = %v, want one fabric-manager error", errs)
	}
}

func TestFill(t *testing.T) {
	s := &gpu.NodeSnapshot{
		Backend:       "nvml",
		DriverVersion: "535.54.03",
		KernelRelease: "from-backend",
		Errors:        []gpu.QueryError{{Query: "SystemGetCudaDriverVersion", Message: "x"}},
	}
	f := Facts{
		KernelModuleVersion: "535.54.03",
		DeviceNodes:         []string{"/dev/nvidia0"},
		NVSwitch:            true,
		FabricManager:       FabricManagerStopped,
	}
	Fill(s, f, []gpu.QueryError{{Query: "kernel-release", Message: "no such file"}})
	want := &gpu.NodeSnapshot{
		Backend:             "nvml",
		DriverVersion:       "535.54.03",
		KernelModuleVersion: "535.54.03",
		KernelRelease:       "from-backend",
		DeviceNodes:         []string{"/dev/nvidia0"},
		NVSwitch:            true,
		FabricManager:       FabricManagerStopped,
		Errors: []gpu.QueryError{
			{Query: "SystemGetCudaDriverVersion", Message: "x"},
			{Query: "kernel-release", Message: "no such file"},
		},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
	f.DeviceNodes[0] = "changed"
	if s.DeviceNodes[0] != "/dev/nvidia0" {
		t.Error("Fill shares the DeviceNodes slice with Facts")
	}
}
