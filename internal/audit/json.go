package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"time"
)

// wire is the JSON form of a Record: one object per line in exports and
// JSONL files. Durations are Go duration strings ("1m30s"), times RFC 3339
// with nanoseconds in UTC.
type wire struct {
	Seq       uint64   `json:"seq"`
	Key       string   `json:"key"`
	Time      string   `json:"time"`
	Incident  string   `json:"incident,omitempty"`
	Node      string   `json:"node,omitempty"`
	Policy    string   `json:"policy,omitempty"`
	Kind      Kind     `json:"kind"`
	Phase     string   `json:"phase,omitempty"`
	Action    string   `json:"action,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	Message   string   `json:"message,omitempty"`
	Provider  string   `json:"provider,omitempty"`
	RequestID string   `json:"requestID,omitempty"`
	Pod       string   `json:"pod,omitempty"`
	Duration  string   `json:"duration,omitempty"`
	GPUs      []string `json:"gpus,omitempty"`
	Severity  string   `json:"severity,omitempty"`
	DryRun    bool     `json:"dryRun,omitempty"`
	Machine   string   `json:"machine,omitempty"`
	PrevHash  string   `json:"prevHash"`
	Hash      string   `json:"hash"`
}

// MarshalJSON writes the wire form.
func (r Record) MarshalJSON() ([]byte, error) {
	w := wire{
		Seq: r.Seq, Key: r.Key, Incident: r.Incident, Node: r.Node, Policy: r.Policy,
		Kind: r.Kind, Phase: r.Phase, Action: r.Action, Reason: r.Reason, Message: r.Message,
		Provider: r.Provider, RequestID: r.RequestID, Pod: r.Pod, GPUs: r.GPUs,
		Severity: r.Severity, DryRun: r.DryRun, Machine: r.Machine, PrevHash: r.PrevHash, Hash: r.Hash,
	}
	if !r.Time.IsZero() {
		w.Time = r.Time.UTC().Format(time.RFC3339Nano)
	}
	if r.Duration != 0 {
		w.Duration = r.Duration.String()
	}
	return json.Marshal(w)
}

var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// UnmarshalJSON reads the wire form strictly: unknown fields, a bad time,
// duration or hash are errors, so a tampered line is reported rather than
// half-read.
func (r *Record) UnmarshalJSON(b []byte) error {
	var w wire
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the record")
	}
	out := Record{
		Seq: w.Seq, Key: w.Key, Incident: w.Incident, Node: w.Node, Policy: w.Policy,
		Kind: w.Kind, Phase: w.Phase, Action: w.Action, Reason: w.Reason, Message: w.Message,
		Provider: w.Provider, RequestID: w.RequestID, Pod: w.Pod, GPUs: w.GPUs,
		Severity: w.Severity, DryRun: w.DryRun, Machine: w.Machine, PrevHash: w.PrevHash, Hash: w.Hash,
	}
	if len(out.GPUs) == 0 {
		out.GPUs = nil
	}
	if w.Time != "" {
		t, err := time.Parse(time.RFC3339Nano, w.Time)
		if err != nil {
			return fmt.Errorf("time: %w", err)
		}
		out.Time = TimeFromNanos(timeNanos(t))
	}
	if w.Duration != "" {
		d, err := time.ParseDuration(w.Duration)
		if err != nil {
			return fmt.Errorf("duration: %w", err)
		}
		out.Duration = d
	}
	if out.Hash != "" && !hexHash.MatchString(out.Hash) {
		return fmt.Errorf("hash %q is not 64 lower-case hex digits", out.Hash)
	}
	if out.PrevHash != "" && !hexHash.MatchString(out.PrevHash) {
		return fmt.Errorf("prevHash %q is not 64 lower-case hex digits", out.PrevHash)
	}
	*r = out
	return nil
}

// ParseLine parses one JSON line of an export or a JSONL file. Besides the
// JSON it requires what every stored record has: a Seq, a Key, a Kind and
// a Hash.
func ParseLine(line []byte) (Record, error) {
	var r Record
	if err := r.UnmarshalJSON(line); err != nil {
		return Record{}, err
	}
	switch {
	case r.Seq == 0:
		return Record{}, fmt.Errorf("record without seq")
	case r.Hash == "":
		return Record{}, fmt.Errorf("record seq %d without hash", r.Seq)
	}
	if err := r.Validate(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// LineWriter writes records as JSON lines.
type LineWriter struct {
	w   io.Writer
	buf bytes.Buffer
}

// NewLineWriter writes each record to w as it comes, one Write call per
// record so that lines from concurrent writers to a shared w never interleave.
func NewLineWriter(w io.Writer) *LineWriter { return &LineWriter{w: w} }

// Write encodes r as one line.
func (lw *LineWriter) Write(r *Record) error {
	b, err := r.MarshalJSON()
	if err != nil {
		return err
	}
	lw.buf.Reset()
	lw.buf.Write(b)
	lw.buf.WriteByte('\n')
	_, err = lw.w.Write(lw.buf.Bytes())
	return err
}
