package testenv

import (
	"fmt"
	"os/exec"
)

// GoBuild builds the main package pkg (an import path) into the file out
// with the go command on PATH, as a user's `go build` would.
func GoBuild(out, pkg string) error {
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", pkg, err, b)
	}
	return nil
}
