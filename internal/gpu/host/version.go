package host

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ParseModuleVersion finds nvidia.ko's version in the text of
// /proc/driver/nvidia/version. Both forms the driver prints are accepted:
//
//	NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023
//	NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.54.03  Release Build  (...)
func ParseModuleVersion(text string) (version string, open bool, err error) {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "NVRM version:")
		if !ok {
			continue
		}
		head, tail, ok := strings.Cut(rest, "Kernel Module")
		if !ok {
			return "", false, fmt.Errorf("NVRM version line %q: no %q", rest, "Kernel Module")
		}
		for _, tok := range strings.Fields(tail) {
			if isVersion(tok) {
				return tok, strings.Contains(head, "Open"), nil
			}
		}
		return "", false, fmt.Errorf("NVRM version line %q: no version number", rest)
	}
	// A line longer than the scanner's buffer also ends up here; the real
	// file is two short lines, so treating that as "not found" is fine.
	return "", false, errors.New("no NVRM version line")
}

// isVersion accepts dotted decimal numbers ("535.54.03"), which rules out
// the build date and time that follow the version on the same line.
func isVersion(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

func readModuleVersion(procFS string) (string, bool, error) {
	b, err := os.ReadFile(filepath.Join(procFS, "driver", "nvidia", "version"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, fmt.Errorf("nvidia kernel module not loaded: %w", err)
	}
	if err != nil {
		return "", false, err
	}
	return ParseModuleVersion(string(b))
}

func readKernelRelease(procFS string) (string, error) {
	b, err := os.ReadFile(filepath.Join(procFS, "sys", "kernel", "osrelease"))
	if err != nil {
		return "", err
	}
	r := strings.TrimSpace(string(b))
	if r == "" {
		return "", errors.New("empty kernel release")
	}
	return r, nil
}
