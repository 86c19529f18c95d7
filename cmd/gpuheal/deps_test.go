package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const self = "github.com/gpuheal/gpuheal/cmd/gpuheal"

// forbidden are what the operator's CLI must not link (DESIGN.md): the
// agent (and so cel-go and NVML), cgo, and package testing with the test
// helpers. A path ending in "/" forbids the package and those below it.
var forbidden = []string{
	"github.com/gpuheal/gpuheal/internal/agent",
	"github.com/gpuheal/gpuheal/internal/agent/",
	"github.com/gpuheal/gpuheal/internal/testproc",
	"github.com/google/cel-go/",
	"github.com/NVIDIA/go-nvml/",
	"runtime/cgo",
	"plugin", // cgo, and what kustomize (cli-runtime) would bring
	"testing",
}

// pkg is one line of go list.
type pkg struct {
	path     string
	standard bool
	cgo      bool
	imports  []string
}

// TestLinksNoAgentCgoOrTesting lists what cmd/gpuheal links and names each
// forbidden package with the chain of imports that brings it in.
func TestLinksNoAgentCgoOrTesting(t *testing.T) {
	t.Parallel()
	pkgs := listDeps(t)
	// One line per forbidden entry (the shortest chain to any package it
	// covers), so that a whole module reads as one finding.
	found := map[string][]string{}
	for _, p := range pkgs {
		what := ""
		switch f := forbiddenBy(p.path); {
		case f != "" && f != "runtime/cgo":
			what = strings.TrimSuffix(f, "/")
		case p.cgo && !p.standard:
			// runtime/cgo itself comes with net and os/user, which fall
			// back to pure Go; a package of ours or a module's with cgo
			// files is what makes the CLI need a C toolchain and libc.
			what = "runtime/cgo (cgo in " + p.path + ")"
		}
		if what == "" {
			continue
		}
		if c := chain(pkgs, p.path); found[what] == nil || len(c) < len(found[what]) {
			found[what] = c
		}
	}
	var bad []string
	for what, c := range found {
		bad = append(bad, what+" via "+strings.Join(c, " → "))
	}
	slices.Sort(bad)
	if len(bad) > 0 {
		t.Errorf("cmd/gpuheal links what the operator's CLI must not (DESIGN.md: no agent, no cel-go, no cgo, no package testing):\n  %s",
			strings.Join(bad, "\n  "))
	}
}

// forbiddenBy is the entry of forbidden that covers path, or "".
func forbiddenBy(path string) string {
	for _, f := range forbidden {
		if path == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(path, f)) {
			return f
		}
	}
	return ""
}

// listDeps runs go list -deps on the CLI as it is built by default (cgo
// on where a C compiler is, as make build does).
func listDeps(t *testing.T) map[string]pkg {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the CLI's packages: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-deps", "-f", `{{.ImportPath}} {{.Standard}} {{len .CgoFiles}} {{join .Imports ","}}`, self)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", self, err, stderr.String())
	}
	pkgs := map[string]pkg{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			t.Fatalf("go list printed %q", sc.Text())
		}
		p := pkg{path: f[0], standard: f[1] == "true", cgo: f[2] != "0"}
		if len(f) > 3 {
			p.imports = strings.Split(f[3], ",")
		}
		pkgs[p.path] = p
	}
	if _, ok := pkgs[self]; !ok {
		t.Fatalf("go list did not list %s:\n%s", self, out)
	}
	return pkgs
}

// chain is the shortest import path from the CLI's main to target, our
// own packages shortened.
func chain(pkgs map[string]pkg, target string) []string {
	prev := map[string]string{self: ""}
	queue := []string{self}
	for len(queue) > 0 && prev[target] == "" && target != self {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range pkgs[p].imports {
			if _, seen := prev[imp]; !seen {
				prev[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	var out []string
	for p := target; p != ""; p = prev[p] {
		out = append([]string{strings.TrimPrefix(p, "github.com/gpuheal/gpuheal/")}, out...)
	}
	return out
}
