package dashboards

import (
	"regexp"
	"slices"
	"strings"
)

// metricNames returns the metric names an expression selects, in order of
// first use. It is a tokenizer, not a PromQL parser (the module does not
// depend on Prometheus): it is right for expressions promtool accepts,
// which the tests check too.
func metricNames(expr string) []string {
	s := promStrings.ReplaceAllString(expr, `""`)
	s = promBraces.ReplaceAllString(s, "{}")   // label matchers
	s = promBrackets.ReplaceAllString(s, "[]") // ranges, subqueries, Grafana's $__rate_interval
	s = promGrouping.ReplaceAllString(s, " ")  // label lists of by, on, group_left, ...
	var out []string
	for _, loc := range promTokens.FindAllStringIndex(s, -1) {
		tok := s[loc[0]:loc[1]]
		switch {
		case strings.ContainsRune("0123456789.", rune(tok[0])): // number or duration
		case promKeywords[strings.ToLower(tok)]:
		case strings.HasPrefix(strings.TrimLeft(s[loc[1]:], " \t\n"), "("): // function or aggregation
		case !slices.Contains(out, tok):
			out = append(out, tok)
		}
	}
	return out
}

var (
	promStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promBraces   = regexp.MustCompile(`\{[^}]*\}`)
	promBrackets = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promTokens   = regexp.MustCompile(`[0-9.][0-9a-zA-Z_.]*|[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords = map[string]bool{
		"and": true, "or": true, "unless": true, "atan2": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"inf": true, "nan": true,
	}
)
