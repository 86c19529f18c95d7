package host

import (
	"strings"
	"testing"
)

func TestParseModuleVersion(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    string
		open    bool
		wantErr bool
	}{
		{
			name: "proprietary",
			text: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023\n" +
				"GCC version:  gcc version 11.3.0 (Ubuntu 11.3.0-1ubuntu1~22.04.1)\n",
			want: "535.54.03",
		},
		{
			name: "open",
			text: "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16-I3-C05-1)  Tue Mar  5 22:15:33 UTC 2024\n" +
				"GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n",
			want: "550.54.15",
			open: true,
		},
		{
			name: "open aarch64",
			text: "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.124.06  Release Build  (dvs-builder@U16-I2-C03-12-4)  Wed Feb 26 01:55:29 UTC 2025\n",
			want: "570.124.06",
			open: true,
		},
		{
			name: "old two-part version",
			text: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  390.144  Thu Jun 24 00:03:47 UTC 2021\n",
			want: "390.144",
		},
		{name: "empty", text: "", wantErr: true},
		{name: "gcc line only", text: "GCC version:  gcc version 11.3.0\n", wantErr: true},
		{name: "no kernel module words", text: "NVRM version: something 535.54.03\n", wantErr: true},
		{name: "no version", text: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  Tue Jun  6 22:20:39 UTC 2023\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, open, err := ParseModuleVersion(tt.text)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want || open != tt.open {
				t.Errorf("got (%q, open=%v), want (%q, open=%v)", got, open, tt.want, tt.open)
			}
		})
	}
}

func FuzzParseModuleVersion(f *testing.F) {
	f.Add("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023\n")
	f.Add("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build\n")
	f.Add("NVRM version: Kernel Module ..1.\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		v, _, err := ParseModuleVersion(text)
		if err != nil {
			if v != "" {
				t.Fatalf("error %v with version %q", err, v)
			}
			return
		}
		if !isVersion(v) || !strings.Contains(text, v) {
			t.Fatalf("version %q is not a dotted number taken from the input", v)
		}
	})
}
