package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCmd(t *testing.T, newCmd func(*bytes.Buffer) interface {
	SetArgs([]string)
	ExecuteContext(context.Context) error
}, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newCmd(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func simCmd(out *bytes.Buffer) interface {
	SetArgs([]string)
	ExecuteContext(context.Context) error
} {
	c := newSimCommand(out)
	c.SetOut(out)
	c.SetErr(out)
	return c
}

func modelCmd(out *bytes.Buffer) interface {
	SetArgs([]string)
	ExecuteContext(context.Context) error
} {
	c := newModelCommand(out)
	c.SetOut(out)
	c.SetErr(out)
	return c
}

func TestSimTrainEval(t *testing.T) {
	dir := t.TempDir()
	train, held := filepath.Join(dir, "train"), filepath.Join(dir, "held")
	out, err := runCmd(t, simCmd, "traces", "--gpus", "24", "--days", "3", "--seed", "21", "--failure-rate", "15", "--out", train)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "bytes per GPU-day") || !strings.Contains(out, "24 GPUs") {
		t.Errorf("sim traces printed %q", out)
	}
	if _, err := runCmd(t, simCmd, "traces", "--gpus", "16", "--days", "3", "--seed", "22", "--failure-rate", "15", "--out", held); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "model.json")
	out, err = runCmd(t, modelCmd, "train", "--traces", train, "--out", model, "--trees", "20", "--depth", "3")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "threshold") {
		t.Errorf("model train printed %q", out)
	}
	var file struct {
		Training struct{ Command string }
	}
	data, _ := os.ReadFile(model)
	if err := json.Unmarshal(data, &file); err != nil || !strings.Contains(file.Training.Command, "--trees 20") {
		t.Errorf("model file records command %q (%v), want the flags given", file.Training.Command, err)
	}

	svg := filepath.Join(dir, "pr.svg")
	out, err = runCmd(t, modelCmd, "eval", "--traces", held, "--model", model, "-o", "json", "--pr-curve", svg)
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("eval -o json: %v\n%s", err, out)
	}
	for _, k := range []string{"precision", "recall", "pr_auc", "median_lead_seconds", "baseline"} {
		if _, ok := r[k]; !ok {
			t.Errorf("eval JSON lacks %q", k)
		}
	}
	base, _ := r["baseline"].(map[string]any)
	for _, k := range []string{"precision", "recall", "pr_auc", "median_lead_seconds"} {
		if _, ok := base[k]; !ok {
			t.Errorf("eval JSON baseline lacks %q", k)
		}
	}
	if data, err := os.ReadFile(svg); err != nil || !bytes.HasPrefix(data, []byte("<svg")) {
		t.Errorf("PR curve: %v, starts %.20q", err, data)
	}

	out, err = runCmd(t, modelCmd, "eval", "--traces", held, "--model", model)
	if err != nil || !strings.Contains(out, "baseline rules") || !strings.Contains(out, "precision") {
		t.Errorf("eval text: %v\n%s", err, out)
	}
}

func TestModelAndSimFlagErrors(t *testing.T) {
	dir := t.TempDir()
	emptyAudit := filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(emptyAudit, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd func(*bytes.Buffer) interface {
			SetArgs([]string)
			ExecuteContext(context.Context) error
		}
		args []string
		want string
	}{
		{simCmd, []string{"traces", "--gpus", "2"}, "--out"},
		{simCmd, []string{"traces", "--preset", "mars", "--out", dir}, `preset "mars"`},
		{simCmd, []string{"traces", "--gpus", "0", "--out", dir}, "gpus 0"},
		{modelCmd, []string{"train", "--out", "m.json"}, "--traces"},
		{modelCmd, []string{"train", "--traces", dir, "--prometheus", "http://p:9090", "--audit-jsonl", emptyAudit, "--out", "m.json"},
			"--traces and --prometheus: give one"},
		{modelCmd, []string{"train", "--prometheus", "http://p:9090", "--out", "m.json"}, "--audit-db or --audit-jsonl"},
		{modelCmd, []string{"train", "--traces", dir, "--since", "1d", "--out", "m.json"}, "--since: only with --prometheus"},
		{modelCmd, []string{"train", "--prometheus", "http://p:9090", "--audit-jsonl", emptyAudit, "--since", "yesterday", "--out", "m.json"},
			`--since: "yesterday"`},
		{modelCmd, []string{"train", "--prometheus", "http://p:9090", "--audit-jsonl", filepath.Join(dir, "none"), "--out", "m.json"},
			"audit file"},
		{modelCmd, []string{"train", "--prometheus", "http://p:9090", "--audit-jsonl", emptyAudit, "--step", "1500ms", "--out", "m.json"},
			"step 1.5s"},
		{modelCmd, []string{"eval", "--traces", dir, "-o", "csv"}, `--output (-o) "csv": want one of table, json, yaml`},
		{modelCmd, []string{"eval", "--traces", dir, "--min-lead", "1h"}, "--horizon/--min-lead"},
		{modelCmd, []string{"eval", "--traces", dir}, "manifest"},
		{modelCmd, []string{"eval", "--traces", dir, "--model", filepath.Join(dir, "none.json")}, "reading model file"},
	} {
		_, err := runCmd(t, tc.cmd, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want it to mention %q", tc.args, err, tc.want)
		}
	}
}
