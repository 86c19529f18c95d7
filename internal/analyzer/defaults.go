package analyzer

import (
	_ "embed"
	"sync"
)

//go:embed default-rules.yaml
var defaultRulesYAML []byte

var defaultRuleSet = sync.OnceValues(func() (*RuleSet, error) { return Load(defaultRulesYAML) })

// DefaultRulesYAML is the embedded default rule set, for users to copy.
func DefaultRulesYAML() []byte { return append([]byte(nil), defaultRulesYAML...) }

// DefaultRuleSet is the embedded default rule set, compiled once. The
// file is part of the build and TestDefaultRuleSet loads it, so an error
// here is a programming error, not a runtime condition.
func DefaultRuleSet() *RuleSet {
	rs, err := defaultRuleSet()
	if err != nil {
		panic("analyzer: embedded default-rules.yaml: " + err.Error())
	}
	return rs
}
