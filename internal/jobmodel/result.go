package jobmodel

import (
	"time"
)

// NodeHourPrice is the on-demand price of an 8-GPU node-hour the seed
// article used (p4d.24xlarge).
const NodeHourPrice = 32.77

// Result is what one arm measured.
type Result struct {
	Arm         Arm
	Nodes       int
	Days        float64
	Faults      int
	LemonBoards int // lemon boards that were installed
	// Outages: each broken node, from the fault to back in service.
	Outages                            []time.Duration
	Reboots, Replacements              int
	LemonsRetired                      int
	Interruptions                      int
	JobGPUHours                        float64 // GPU-hours held by jobs
	LostWorkGPUHours                   float64 // work since the last checkpoint, lost
	IdleGPUHours                       float64 // held by jobs hanging or restarting
	JobsFinished, JobsOnTime, JobsLate int
}

// MeanTimeToRecover over the outages.
func (r *Result) MeanTimeToRecover() time.Duration {
	if len(r.Outages) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range r.Outages {
		sum += d
	}
	return sum / time.Duration(len(r.Outages))
}

// FailureRate is job interruptions per 1,000 GPU-hours held by jobs.
func (r *Result) FailureRate() float64 {
	if r.JobGPUHours == 0 {
		return 0
	}
	return float64(r.Interruptions) / r.JobGPUHours * 1000
}

// SLA is the share of jobs due within the run that finished by their
// deadline.
func (r *Result) SLA() float64 {
	due := r.JobsFinished + r.JobsLate
	if due == 0 {
		return 1
	}
	return float64(r.JobsOnTime) / float64(due)
}

// DownGPUHours is the GPU time of broken nodes, from fault to back in
// service (what the live soak counts as lost).
func (r *Result) DownGPUHours() float64 {
	var sum time.Duration
	for _, d := range r.Outages {
		sum += d
	}
	return sum.Hours() * 8
}

// LostGPUHours is work lost and GPU time spent hanging and restarting.
func (r *Result) LostGPUHours() float64 { return r.LostWorkGPUHours + r.IdleGPUHours }

// CostPerMonth is the lost GPU-hours' price over 30 days.
func (r *Result) CostPerMonth() float64 {
	if r.Days == 0 {
		return 0
	}
	return r.LostGPUHours() / 8 * NodeHourPrice * 30 / r.Days
}
