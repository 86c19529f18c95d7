// Package soak runs the short soak of `make test`: minutes of fleet life
// (the built agent and controller, a real API server with kwok, faults and
// chaos) with every invariant checked. It is a package of its own because
// it is the suite's longest test: `make test-integration` starts it first,
// beside the others, instead of after them. Like test/e2e it needs -tags
// integration.
package soak
