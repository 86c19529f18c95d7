package cli

import "errors"

// ExitError carries a specific process exit code (e.g. 3 for "no GPU").
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// errSilent marks an ExitError whose only message is its exit status (the
// report was already printed).
var errSilent = errors.New("")

// Silent reports whether err only carries an exit status.
func Silent(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee) && errors.Is(ee.Err, errSilent)
}

// ExitCode maps an error to the process exit code: 1 unless it says otherwise.
func ExitCode(err error) int {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return 1
}
