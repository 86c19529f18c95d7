package procs

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// Signal sends sig to the process's whole group, so that whatever it
// started in its group gets it too, as with a terminal's Ctrl-C.
func (p *Process) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := syscall.Kill(-p.PID(), sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling %s: %w", p.Name, err)
	}
	return nil
}

// Stop asks the process group to end (StopSignal, SIGTERM by default),
// kills it after timeout, and kills what is left of the group once the
// process has ended. It returns nil when the process ended in time,
// whatever its exit status (see Err).
func (p *Process) Stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.Signal(p.stopSig)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		// What the process started in its group and left behind (a
		// shell's background job ignores SIGINT) must not outlive it.
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		return nil
	case <-timer.C:
		p.Kill()
		return fmt.Errorf("%s did not stop within %s; killed", p.Name, timeout)
	}
}

// Kill ends the process group at once (SIGKILL), as a crash or an OOM
// kill does, and waits for the process to exit.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
	// The group may be gone while the leader is not yet reaped.
	_ = p.cmd.Process.Kill()
	<-p.done
}

// StopAll stops the processes in reverse order of the slice; nil
// entries are skipped.
func StopAll(ps []*Process, timeout time.Duration) error {
	var errs []error
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i] != nil {
			errs = append(errs, ps[i].Stop(timeout))
		}
	}
	return errors.Join(errs...)
}
