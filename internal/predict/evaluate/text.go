package evaluate

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteText prints the report for people.
func WriteText(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%d trace set(s), %.0f GPU-days, %d samples, %d failures (%d with a precursor)\n",
		len(r.Traces), r.GPUDays, r.Samples, r.Failures, r.FailuresWithPrecursor)
	for _, t := range r.Traces {
		fmt.Fprintf(tw, "  %s: %s seed %d, %d GPUs × %g days, %d failures\n", t.Dir, t.Source, t.Seed, t.GPUs, t.Days, t.Failures)
	}
	fmt.Fprintf(tw, "horizon %s, minimum lead %s, alarms re-raised every %s\n\n",
		secs(r.HorizonSeconds), secs(r.MinLeadSeconds), secs(r.ReraiseSeconds))
	b := &r.Baseline
	fmt.Fprintf(tw, "\tmodel\tbaseline rules\n")
	fmt.Fprintf(tw, "operating point\trisk ≥ %.4g\tany rule active\n", r.Threshold)
	fmt.Fprintf(tw, "precision\t%s\t%s\n", withCI(r.Precision, r.PrecisionCI95), withCI(b.Precision, b.PrecisionCI95))
	fmt.Fprintf(tw, "recall\t%s\t%s\n", withCI(r.Recall, r.RecallCI95), withCI(b.Recall, b.RecallCI95))
	fmt.Fprintf(tw, "PR-AUC\t%.3f\t%.3f\n", r.PRAUC, b.PRAUC)
	fmt.Fprintf(tw, "median lead time\t%s\t%s\n", secs(int64(r.MedianLeadSeconds)), secs(int64(b.MedianLeadSeconds)))
	fmt.Fprintf(tw, "alarms (true)\t%d (%d)\t%d (%d)\n", r.Alarms, r.TrueAlarms, b.Alarms, b.TrueAlarms)
	fmt.Fprintf(tw, "failures predicted ≥ min lead\t%d of %d\t%d of %d\n", r.Detected, r.Failures, b.Detected, b.Failures)
	fmt.Fprintf(tw, "failures alarmed at all\t%d\t%d\n", r.AlarmedFailures, b.AlarmedFailures)
	fmt.Fprintf(tw, "precision at recall ≥ 0.6\t%.3f\t\n", r.PrecisionAtRecall60)
	fmt.Fprintf(tw, "recall at precision ≥ 0.92\t%.3f\t\n\n", r.RecallAtPrecision92)
	if o := r.PrecursorOnsetOracle; o != nil {
		fmt.Fprintf(tw, "ceiling: alarming from the onset of every labelled precursor would give precision %.3f, recall %.3f\n\n", o.Precision, o.Recall)
	}
	fmt.Fprintf(tw, "class\tfailures\twith precursor\tpredicted (model)\tpredicted (baseline)\n")
	for _, c := range r.ByClass {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", c.Class, c.Failures, c.WithPrecursor, c.Detected, c.BaselineDetected)
	}
	fmt.Fprintf(tw, "\nfalse alarms by what was going on\tmodel\tbaseline\n")
	for _, c := range r.FalseAlarms {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", c.Cause, c.Model, c.Baseline)
	}
	return tw.Flush()
}

func withCI(v float64, ci [2]float64) string {
	return fmt.Sprintf("%.3f [%.2f, %.2f]", v, ci[0], ci[1])
}

func secs(s int64) string { return (time.Duration(s) * time.Second).String() }
