package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpuheal/gpuheal/internal/audit/sqlite"
	"github.com/gpuheal/gpuheal/internal/auditapi"
	"github.com/gpuheal/gpuheal/internal/auditapi/auditapitest"
)

// auditDB writes the fixture's incidents, relative to now, to a SQLite file.
func auditDB(t *testing.T, now time.Time) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	auditapitest.WriteSQLite(t, path, now)
	return path
}

// controller serves the audit file at path as the controller does.
func controller(t *testing.T, path string) string {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(auditapi.Prefix, auditapi.Handler(s))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		_ = s.Close()
	})
	return srv.URL
}

func TestIncidents(t *testing.T) {
	now := time.Now().UTC()
	db := auditDB(t, now)
	url := controller(t, db)
	open := incident{Incident: auditapitest.OpenIncident, Node: auditapitest.NodeB, Opened: now.Add(-time.Hour),
		Last: now.Add(-time.Hour + time.Minute), Action: "Replace", Outcome: "Draining", Duration: "1m0s",
		Reason: "NvidiaXID48Error", Records: 4}
	done := incident{Incident: auditapitest.DoneIncident, Node: auditapitest.NodeA, Opened: now.Add(-3 * time.Hour),
		Last: now.Add(-3*time.Hour + 12*time.Minute), Action: "Reboot", Outcome: "Succeeded", Ended: true,
		Duration: "12m0s", Reason: "NvidiaXID79Error", Records: 9}
	old := incident{Incident: auditapitest.OldIncident, Node: auditapitest.NodeA, Opened: now.Add(-30 * time.Hour),
		Last: now.Add(-30*time.Hour + 2*time.Minute), Action: "CordonOnly", Outcome: "Failed", Ended: true,
		Duration: "2m0s", Reason: "NvidiaXID119Error", Records: 3}

	for name, src := range map[string][]string{"audit-db": {"--audit-db", db}, "controller-url": {"--controller-url", url}} {
		t.Run(name, func(t *testing.T) {
			tests := []struct {
				args []string
				want []incident
			}{
				{nil, []incident{open, done}},
				{[]string{"--since", "0"}, []incident{open, done, old}},
				{[]string{"--since", "0", auditapitest.NodeA}, []incident{done, old}},
				{[]string{"--since", "0", "--node", auditapitest.NodeA}, []incident{done, old}},
				{[]string{"--since", "0", auditapitest.NodeB, auditapitest.NodeA}, []incident{open, done, old}},
				{[]string{"--since", "0", auditapitest.NodeB, "gpu-z"}, []incident{open}},
				{[]string{"--since", "30m"}, nil},
			}
			for _, tt := range tests {
				args := append(append([]string{"incidents", "-o", "json"}, src...), tt.args...)
				out, code := runCLI(t, "", args...)
				var got []incident
				if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
					t.Fatalf("%v: exit %d, %v:\n%s", args, code, err, out)
				}
				if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty(), cmp.AllowUnexported(incident{}), cmp.FilterPath(func(p cmp.Path) bool {
					return p.Last().String() == ".duration"
				}, cmp.Ignore())); diff != "" {
					t.Errorf("%v (-want +got):\n%s", tt.args, diff)
				}
			}

			out, code := runCLI(t, "", append([]string{"incidents"}, src...)...)
			want := []string{
				`^INCIDENT +NODE +OPENED +ACTION +OUTCOME +DURATION +REASON$`,
				`^gpu-b-2222 +gpu-b +60m +Replace +Draining +1m0s +NvidiaXID48Error$`,
				`^gpu-a-1111 +gpu-a +3h +Reboot +Succeeded +12m0s +NvidiaXID79Error$`,
			}
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			if code != 0 || len(lines) != len(want) {
				t.Fatalf("table: exit %d:\n%s", code, out)
			}
			for i, re := range want {
				if !regexp.MustCompile(re).MatchString(lines[i]) {
					t.Errorf("line %d %q does not match %s", i, lines[i], re)
				}
			}
		})
	}

	// An incident that began before --since is shown whole: opened when
	// it was detected, with the reason it was detected for.
	out, code := runCLI(t, "", "incidents", "-o", "json", "--audit-db", db, "--since", "2h55m")
	var got []incident
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got) != 2 {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if g := got[1]; g.Incident != done.Incident || !g.Opened.Equal(done.Opened) || g.Reason != done.Reason || g.Records != 9 {
		t.Errorf("incident cut by --since = %+v, want it whole", g)
	}

	out, code = runCLI(t, "", "incidents", "--audit-db", db, "-o", "wide", auditapitest.NodeB)
	matchLines(t, out, code,
		`^INCIDENT +NODE +OPENED +ACTION +OUTCOME +DURATION +REASON +LAST +RECORDS$`,
		`^gpu-b-2222 +gpu-b +60m +Replace +Draining +1m0s +NvidiaXID48Error +59m +4$`)
	out, code = runCLI(t, "", "incidents", "--audit-db", db, "-o", "yaml", auditapitest.NodeB)
	if code != 0 || !strings.Contains(out, "incident: "+auditapitest.OpenIncident+"\n") {
		t.Errorf("yaml: exit %d:\n%s", code, out)
	}

	out, code = runCLI(t, "", "incidents", "--audit-db", db, "--since", "1m")
	if code != 0 || strings.TrimSpace(out) != "no incidents" {
		t.Errorf("nothing recent: exit %d %q", code, out)
	}
}

func TestIncidentsBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"incidents", "-o", "xml", "--audit-db", "x"}, `--output (-o) "xml": want one of table, wide, json, yaml`},
		{[]string{"incidents", "--since", "-1h", "--audit-db", "x"}, "--since -1h0m0s"},
		{[]string{"incidents", "--audit-db", "a", "--controller-url", "http://b"}, "at most one of"},
		{[]string{"incidents", "--audit-db", filepath.Join(t.TempDir(), "none.db")}, "none.db"},
		{[]string{"incidents", "--controller-url", "localhost:8080"}, `"localhost:8080"`},
	}
	for _, tt := range tests {
		out, code := runCLI(t, "", tt.args...)
		if code == 0 || !strings.Contains(out, tt.want) {
			t.Errorf("%v: exit %d %q, want an error naming %s", tt.args, code, out, tt.want)
		}
	}
}
