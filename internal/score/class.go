package score

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Class is how heavy a past incident was; each class has a weight in
// penalty points (Config.Weights). It is stored by name (MarshalText), so
// events written to the audit store stay readable if classes are added.
type Class int

// Classes from lightest to heaviest default weight. The zero value is not a
// class: an event without one is scored as ClassWarning (something happened,
// nobody said how bad).
const (
	ClassInfo       Class = iota + 1 // informational; weighs nothing by default
	ClassRestartApp                  // the application was at fault (Xid 13, 31, 43…)
	ClassWarning                     // a warning-severity finding with no heavier action
	ClassResetGPU                    // a GPU was reset
	ClassFatal                       // fatal without reboot or replace: CordonOnly, or no action
	ClassReboot                      // the node was rebooted
	ClassReplace                     // the node was (or should have been) replaced

	numClasses = int(ClassReplace) + 1
)

var classNames = [numClasses]string{
	ClassInfo:       "info",
	ClassRestartApp: "restart-app",
	ClassWarning:    "warning",
	ClassResetGPU:   "reset-gpu",
	ClassFatal:      "fatal",
	ClassReboot:     "reboot",
	ClassReplace:    "replace",
}

// Classes lists every class, lightest first.
func Classes() []Class {
	return []Class{ClassInfo, ClassRestartApp, ClassWarning, ClassResetGPU, ClassFatal, ClassReboot, ClassReplace}
}

func (c Class) valid() bool { return c >= ClassInfo && c <= ClassReplace }

func (c Class) String() string {
	if !c.valid() {
		return "Class(" + strconv.Itoa(int(c)) + ")"
	}
	return classNames[c]
}

// ParseClass accepts the names String returns.
func ParseClass(s string) (Class, error) {
	for _, c := range Classes() {
		if classNames[c] == s {
			return c, nil
		}
	}
	return 0, fmt.Errorf("class %q: want info, restart-app, warning, reset-gpu, fatal, reboot or replace", s)
}

// MarshalText writes the class's name.
func (c Class) MarshalText() ([]byte, error) {
	if !c.valid() {
		return nil, fmt.Errorf("class %d has no name", int(c))
	}
	return []byte(classNames[c]), nil
}

// UnmarshalText reads a name written by MarshalText.
func (c *Class) UnmarshalText(b []byte) error {
	v, err := ParseClass(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// ClassFor maps an incident's action and severity to a class. The action
// may be the controller's (Reboot, Replace, CordonOnly, Ignore) or the
// agent's recommendation (none, restart-app, reset-gpu, reboot, replace);
// case and surrounding space do not matter.
//
// A remediating action decides the class on its own, because it says what
// the problem cost: a fatal Xid the agent blames on the application
// (restart-app) says little about the hardware. Without one (none, Ignore,
// empty or unknown) the severity decides: fatal or critical → ClassFatal, info →
// ClassInfo, and warning, unknown or anything else → ClassWarning.
func ClassFor(action, severity string) Class {
	switch strings.ToLower(strings.TrimSpace(action)) {
	case "replace":
		return ClassReplace
	case "reboot":
		return ClassReboot
	case "reset-gpu", "resetgpu": // the agent's advice, the audit store's action
		return ClassResetGPU
	case "restart-app":
		return ClassRestartApp
	case "cordononly":
		return ClassFatal
	}
	switch strings.ToLower(strings.TrimSpace(severity)) {
	case "fatal", "critical": // critical: the audit store's word
		return ClassFatal
	case "info":
		return ClassInfo
	}
	return ClassWarning
}

// ParseWeights reads per-class weights written as "replace=40,reboot=20"
// (a flag or environment value). Classes not named keep their defaults.
func ParseWeights(s string) (map[Class]float64, error) {
	w := make(map[Class]float64)
	if strings.TrimSpace(s) == "" {
		return w, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("weight %q: want class=points", part)
		}
		c, err := ParseClass(strings.TrimSpace(name))
		if err != nil {
			return nil, fmt.Errorf("weight %q: %w", part, err)
		}
		if _, dup := w[c]; dup {
			return nil, fmt.Errorf("weight %q: class %s given twice", part, c)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return nil, fmt.Errorf("weight %q: points must be a number ≥ 0", part)
		}
		w[c] = f
	}
	return w, nil
}
