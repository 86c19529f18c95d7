package fleetreport_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpuheal/gpuheal/internal/fleetreport"
	fx "github.com/gpuheal/gpuheal/internal/fleetreport/fleetreporttest"
	"github.com/gpuheal/gpuheal/internal/score"
)

func f(v float64) *float64 { return &v }

func at(d time.Duration) time.Time { return fx.Now.Add(-d) }

func endAt(d time.Duration) *time.Time { t := fx.Now.Add(-d); return &t }

func clusterNodes() map[string]fleetreport.NodeInfo {
	out := map[string]fleetreport.NodeInfo{}
	for _, n := range fx.ClusterNodes() {
		out[n.Name] = fleetreport.NodeInfo{InstanceType: n.InstanceType, Zone: n.Zone, GPUs: n.GPUs}
	}
	return out
}

func defaults(since time.Duration) fleetreport.Options {
	return fleetreport.Options{Since: fx.Now.Add(-since), Lemon: score.DefaultLemonRule()}
}

var approx = cmpopts.EquateApprox(0, 1e-9)

// TestBuildFixture is the whole report of the fixture, worked out by hand.
func TestBuildFixture(t *testing.T) {
	got, err := fleetreport.Build(fx.Records(fx.Specs()), clusterNodes(), fx.Now, defaults(30*fx.Day))
	if err != nil {
		t.Fatal(err)
	}
	const p5, p4d, a, b, unknown = "p5.48xlarge", "p4d.24xlarge", "us-east-1a", "us-east-1b", fleetreport.Unknown
	mins := func(n float64) float64 { return n * 60 }
	incidents := []fleetreport.Incident{
		{ID: "gpu-b-0001", Node: "gpu-b", Machine: "uuid-b", InstanceType: unknown, Zone: unknown, Detected: at(25 * fx.Day),
			Ended: endAt(25*fx.Day - 15*time.Minute), Outcome: "Succeeded", Action: "Reboot", Class: "reboot", Hardware: true,
			Reason: "NvidiaXID79Error", RecoverSeconds: f(mins(15))},
		{ID: "gpu-a-0001", Node: "gpu-a", Machine: "uuid-a1", InstanceType: p5, Zone: a, Detected: at(20 * fx.Day),
			Ended: endAt(20*fx.Day - 12*time.Minute), Outcome: "Succeeded", Action: "Reboot", Class: "reboot", Hardware: true,
			Reason: "NvidiaXID79Error", RecoverSeconds: f(mins(12)), GPUsOut: 8, GPUHoursLost: f(8 * 12.0 / 60)},
		{ID: "gpu-b-0002", Node: "gpu-b", Machine: "uuid-b", InstanceType: unknown, Zone: unknown, Detected: at(12 * fx.Day),
			Ended: endAt(12*fx.Day - 20*time.Minute), Outcome: "Succeeded", Action: "Reboot", Class: "reboot", Hardware: true,
			Reason: "NvidiaXID79Error", RecoverSeconds: f(mins(20))},
		{ID: "gpu-a-0002", Node: "gpu-a", Machine: "uuid-a1", InstanceType: p5, Zone: a, Detected: at(10 * fx.Day),
			Ended: endAt(10*fx.Day - 40*time.Minute), Outcome: "Succeeded", Action: "Replace", Class: "replace", Hardware: true,
			Reason: "NvidiaXID48Error", GPUs: []string{fx.GPUa1}, RecoverSeconds: f(mins(40)), GPUsOut: 8, GPUHoursLost: f(8 * 40.0 / 60)},
		{ID: "gpu-c-0001", Node: "gpu-c", Machine: "uuid-c", InstanceType: p4d, Zone: b, Detected: at(5 * fx.Day),
			Ended: endAt(5*fx.Day - 2*time.Hour), Outcome: "Failed", Action: "CordonOnly", Class: "fatal", Hardware: true,
			Reason: "NvidiaXID119Error", RecoverSeconds: f(mins(120)), GPUsOut: 8, GPUHoursLost: f(16)},
		{ID: "gpu-e-0001", Node: "gpu-e", Machine: "uuid-b", InstanceType: p5, Zone: b, Detected: at(3 * fx.Day),
			Ended: endAt(3*fx.Day - 5*time.Minute), Outcome: "Succeeded", Action: "ResetGPU", Class: "reset-gpu", Hardware: true,
			Reason: "NvidiaXID94Error", GPUs: []string{fx.GPUb1}, RecoverSeconds: f(mins(5)), GPUsOut: 1, GPUHoursLost: f(5.0 / 60)},
		{ID: "gpu-a-0003", Node: "gpu-a", Machine: "uuid-a2", InstanceType: p5, Zone: a, Detected: at(2 * fx.Day),
			Ended: endAt(2*fx.Day - 10*time.Minute), Outcome: "Succeeded", Action: "Reboot", Class: "reboot", Hardware: true,
			Reason: "NvidiaXID79Error", RecoverSeconds: f(mins(10)), GPUsOut: 8, GPUHoursLost: f(8 * 10.0 / 60)},
		{ID: "gpu-d-0002", Node: "gpu-d", Machine: "node/gpu-d", InstanceType: unknown, Zone: unknown, Detected: at(fx.Day),
			Ended: endAt(fx.Day - 30*time.Minute), Outcome: "Cancelled", Action: "Reboot", Class: "reboot", Hardware: true,
			Reason: "NvidiaXID79Error", DryRun: true, RecoverSeconds: f(mins(30))},
		{ID: "gpu-a-0004", Node: "gpu-a", Machine: "uuid-a2", InstanceType: p5, Zone: a, Detected: at(fx.Day - 2*time.Hour),
			Ended: endAt(fx.Day - 2*time.Hour - time.Minute), Outcome: "Succeeded", Action: "Ignore", Class: "restart-app",
			Reason: "NvidiaXID13Error", RecoverSeconds: f(mins(1)), GPUsOut: 8, GPUHoursLost: f(8.0 / 60)},
		{ID: "gpu-c-0002", Node: "gpu-c", Machine: "uuid-c", InstanceType: p4d, Zone: b, Detected: at(6 * time.Hour),
			Action: "Replace", Class: "replace", Hardware: true, Reason: "NvidiaXID48Error", GPUsOut: 8, GPUHoursLost: f(48)},
	}
	hours := func(h float64) float64 { return h * 3600 }
	gpuA := fleetreport.Group{Incidents: 4, Hardware: 3, MTBISeconds: f(hours(19*24+2) / 3),
		MTTRSeconds: f(mins(12+40+10+1) / 4), GPUHoursLost: f(1.6 + 8*40.0/60 + 8*10.0/60 + 8.0/60)}
	gpuC := fleetreport.Group{Incidents: 2, Hardware: 2, Open: 1, MTBISeconds: f(hours(5*24 - 6)), MTTRSeconds: f(mins(120)), GPUHoursLost: f(64)}
	unknowns := fleetreport.Group{Name: unknown, Incidents: 3, Hardware: 3, MTBISeconds: f(hours(12 * 24)),
		MTTRSeconds: f(mins(15+20+30) / 3), GPUHoursUnknown: 3}
	named := func(g fleetreport.Group, name string, machines ...string) fleetreport.Group {
		g.Name, g.Machines = name, machines
		return g
	}
	days := make([]fleetreport.Day, 31)
	for i := range days {
		days[i].Day = time.Date(2026, 11, 7+i, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	}
	for _, d := range []struct {
		day       string
		n, hwDays int
	}{{"2026-11-12", 1, 1}, {"2026-11-17", 1, 1}, {"2026-11-25", 1, 1}, {"2026-11-27", 1, 1}, {"2026-12-02", 1, 1},
		{"2026-12-04", 1, 1}, {"2026-12-05", 1, 1}, {"2026-12-06", 2, 1}, {"2026-12-07", 1, 1}} {
		for i := range days {
			if days[i].Day == d.day {
				days[i].Incidents, days[i].Hardware = d.n, d.hwDays
			}
		}
	}
	bound := func(d time.Duration) *float64 { return f(d.Seconds()) }
	since := at(30 * fx.Day)
	want := fleetreport.Report{
		Generated: fx.Now,
		Since:     &since,
		LemonRule: fleetreport.LemonRule{Incidents: 3, WindowSeconds: (30 * fx.Day).Seconds(), Window: "30d"},
		NodeInfo:  "cluster",
		Fleet: fleetreport.Group{Name: "fleet", Incidents: 10, Hardware: 9, Open: 1, MTBISeconds: f(hours(25*24-6) / 9),
			MTTRSeconds: f(mins(15+12+20+40+120+5+10+30+1) / 9), GPUHoursLost: f(1.6 + 8*40.0/60 + 16 + 5.0/60 + 8*10.0/60 + 8.0/60 + 48),
			GPUHoursUnknown: 3},
		Nodes: []fleetreport.Group{
			named(gpuA, "gpu-a", "uuid-a1", "uuid-a2"),
			{Name: "gpu-b", Incidents: 2, Hardware: 2, MTBISeconds: f(hours(13 * 24)), MTTRSeconds: f(mins(35) / 2), GPUHoursUnknown: 2},
			named(gpuC, "gpu-c"),
			{Name: "gpu-d", Incidents: 1, Hardware: 1, MTTRSeconds: f(mins(30)), GPUHoursUnknown: 1},
			{Name: "gpu-e", Incidents: 1, Hardware: 1, MTTRSeconds: f(mins(5)), GPUHoursLost: f(5.0 / 60)},
		},
		Machines: []fleetreport.Group{
			{Name: "uuid-b", Incidents: 3, Hardware: 3, MTBISeconds: f(hours(11 * 24)), MTTRSeconds: f(mins(15+20+5) / 3),
				GPUHoursLost: f(5.0 / 60), GPUHoursUnknown: 2, Nodes: []string{"gpu-b", "gpu-e"}},
			{Name: "uuid-a1", Incidents: 2, Hardware: 2, MTBISeconds: f(hours(10 * 24)), MTTRSeconds: f(mins(52) / 2), GPUHoursLost: f(1.6 + 8*40.0/60)},
			named(gpuC, "uuid-c"),
			{Name: "uuid-a2", Incidents: 2, Hardware: 1, MTBISeconds: f(hours(26)), MTTRSeconds: f(mins(11) / 2), GPUHoursLost: f(8*10.0/60 + 8.0/60)},
			{Name: "node/gpu-d", Incidents: 1, Hardware: 1, MTTRSeconds: f(mins(30)), GPUHoursUnknown: 1},
		},
		InstanceTypes: []fleetreport.Group{
			{Name: p5, Incidents: 5, Hardware: 4, MTBISeconds: f(hours(19*24+2) / 4), MTTRSeconds: f(mins(12+40+5+10+1) / 5),
				GPUHoursLost: f(1.6 + 8*40.0/60 + 5.0/60 + 8*10.0/60 + 8.0/60)},
			unknowns,
			named(gpuC, p4d),
		},
		Zones: []fleetreport.Group{
			named(gpuA, a),
			unknowns,
			{Name: b, Incidents: 3, Hardware: 3, Open: 1, MTBISeconds: f(hours(5*24-6) / 2), MTTRSeconds: f(mins(125) / 2), GPUHoursLost: f(16 + 5.0/60 + 48)},
		},
		Lemons: []fleetreport.Lemon{{Machine: "uuid-b", Node: "gpu-e", Nodes: []string{"gpu-b", "gpu-e"}, Evidence: []fleetreport.Evidence{
			{Incident: "gpu-b-0001", Time: at(25*fx.Day - time.Second), Node: "gpu-b", Class: "reboot", Action: "Reboot", Reason: "NvidiaXID79Error"},
			{Incident: "gpu-b-0002", Time: at(12*fx.Day - time.Second), Node: "gpu-b", Class: "reboot", Action: "Reboot", Reason: "NvidiaXID79Error"},
			{Incident: "gpu-e-0001", Time: at(3*fx.Day - time.Second), Node: "gpu-e", Class: "reset-gpu", Action: "ResetGPU", Reason: "NvidiaXID94Error", GPUs: []string{fx.GPUb1}},
		}}},
		PerDay: days,
		MTBI: []fleetreport.Bucket{
			{Label: "<1h", MaxSeconds: bound(time.Hour)},
			{Label: "1h–6h", MinSeconds: 3600, MaxSeconds: bound(6 * time.Hour)},
			{Label: "6h–1d", MinSeconds: hours(6), MaxSeconds: bound(fx.Day)},
			{Label: "1d–3d", MinSeconds: hours(24), MaxSeconds: bound(3 * fx.Day), Count: 1},
			{Label: "3d–7d", MinSeconds: hours(72), MaxSeconds: bound(7 * fx.Day), Count: 1},
			{Label: "7d–30d", MinSeconds: hours(7 * 24), MaxSeconds: bound(30 * fx.Day), Count: 3},
			{Label: "≥30d", MinSeconds: hours(30 * 24)},
		},
		Incidents: incidents,
	}
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

// TestBuildOptions: how the options change the report, one field at a time.
func TestBuildOptions(t *testing.T) {
	recs := fx.Records(fx.Specs())
	type view struct {
		Incidents     int
		Lemons        []string
		UnknownGPUh   int
		InstanceTypes []string
		FirstDay      string
	}
	viewOf := func(r fleetreport.Report) view {
		v := view{Incidents: r.Fleet.Incidents, UnknownGPUh: r.Fleet.GPUHoursUnknown}
		for _, l := range r.Lemons {
			v.Lemons = append(v.Lemons, l.Machine+"/"+l.GPU)
		}
		for _, g := range r.InstanceTypes {
			v.InstanceTypes = append(v.InstanceTypes, g.Name)
		}
		if len(r.PerDay) > 0 {
			v.FirstDay = r.PerDay[0].Day
		}
		return v
	}
	tests := []struct {
		name  string
		nodes map[string]fleetreport.NodeInfo
		opts  fleetreport.Options
		want  view
	}{
		{"defaults", clusterNodes(), defaults(30 * fx.Day),
			view{10, []string{"uuid-b/"}, 3, []string{"p5.48xlarge", "unknown", "p4d.24xlarge"}, "2026-11-07"}},
		{"no cluster: every type unknown, only a partial drain's GPU count", nil, defaults(30 * fx.Day),
			view{10, []string{"uuid-b/"}, 9, []string{"unknown"}, "2026-11-07"}},
		{"no cluster, 8 GPUs a node", nil, fleetreport.Options{Since: at(30 * fx.Day), Lemon: score.DefaultLemonRule(), GPUsPerNode: 8},
			view{10, []string{"uuid-b/"}, 0, []string{"unknown"}, "2026-11-07"}},
		{"all history", clusterNodes(), fleetreport.Options{Lemon: score.DefaultLemonRule()},
			view{11, []string{"uuid-b/"}, 4, []string{"p5.48xlarge", "unknown", "p4d.24xlarge"}, "2026-10-28"}},
		// The lemon rule reads the whole log over its own window, whatever
		// period the counts cover.
		{"a short period keeps the lemons", clusterNodes(), defaults(2 * fx.Day),
			view{4, []string{"uuid-b/"}, 1, []string{"p5.48xlarge", "p4d.24xlarge", "unknown"}, "2026-12-05"}},
		{"two incidents make a lemon", clusterNodes(), fleetreport.Options{Since: at(30 * fx.Day), Lemon: score.LemonRule{Incidents: 2, Window: 30 * fx.Day}},
			view{10, []string{"uuid-a1/", "uuid-b/", "uuid-c/"}, 3, []string{"p5.48xlarge", "unknown", "p4d.24xlarge"}, "2026-11-07"}},
		{"a week's window", clusterNodes(), fleetreport.Options{Since: at(30 * fx.Day), Lemon: score.LemonRule{Incidents: 2, Window: 7 * fx.Day}},
			view{10, []string{"uuid-c/"}, 3, []string{"p5.48xlarge", "unknown", "p4d.24xlarge"}, "2026-11-07"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fleetreport.Build(recs, tt.nodes, fx.Now, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, viewOf(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildRefusesBadOptions(t *testing.T) {
	_, err := fleetreport.Build(nil, nil, fx.Now, fleetreport.Options{Lemon: score.LemonRule{Incidents: 1}, GPUsPerNode: -1})
	for _, want := range []string{"incidents 1", "window 0s", "GPUs per node -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to name %q", err, want)
		}
	}
}

func TestEmptyLog(t *testing.T) {
	got, err := fleetreport.Build(nil, nil, fx.Now, defaults(7*fx.Day))
	if err != nil {
		t.Fatal(err)
	}
	if got.Fleet.Incidents != 0 || len(got.PerDay) != 8 || got.Lemons == nil || got.Incidents == nil || got.Nodes == nil {
		t.Errorf("empty report = %+v", got)
	}
}

func TestHuman(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 1500 * time.Millisecond: "2s", 90 * time.Second: "1m30s", 3*time.Hour + 59*time.Second: "3h",
		26*time.Hour + 5*time.Minute: "1d2h", 30 * fx.Day: "30d", -time.Minute: "-1m",
	} {
		if got := fleetreport.Human(d); got != want {
			t.Errorf("Human(%s) = %q, want %q", d, got, want)
		}
	}
}
