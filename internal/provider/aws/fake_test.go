package aws

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// fakeAWS speaks just enough of the EC2, Auto Scaling and STS query protocols for
// the real SDK clients to talk to it. Element names follow the SDK's own
// deserializers (ec2 deserializers.go, autoscaling schemas). It keeps state,
// records every call and can fail calls on request.
type fakeAWS struct {
	URL        string
	HTTPClient *http.Client

	mu        sync.Mutex
	instances map[string]*fakeInstance
	calls     []fakeCall
	faults    map[string][]fakeFault // by action, consumed in order
	seq       int
	// arn is who STS GetCallerIdentity says the caller is.
	arn string
	// denied actions answer as IAM does when the role lacks them (EC2
	// UnauthorizedOperation, Auto Scaling AccessDenied), dry runs included.
	denied map[string]bool
}

type fakeInstance struct {
	State     string // EC2 state name: running, stopped, shutting-down, ...
	Group     string // Auto Scaling group, "" for none
	Lifecycle string // Auto Scaling lifecycle state
	Zone      string
	Protected bool // Auto Scaling's ProtectedFromScaleIn

	Reboots      int
	Terminations int
	Replacements int // terminations that kept the group's capacity
}

type fakeCall struct {
	Action    string
	Form      url.Values
	AccessKey string // from the SigV4 credential scope
	Region    string
	Service   string
	RequestID string
}

type fakeFault struct {
	status        int
	code, message string
	// afterApply does the action and then answers with the error, as when
	// an answer is lost on the way back.
	afterApply bool
}

const (
	ec2Version = "2016-11-15"
	asgVersion = "2011-01-01"
	stsVersion = "2011-06-15"
	ec2NS      = "http://ec2.amazonaws.com/doc/2016-11-15/"
	asgNS      = "http://autoscaling.amazonaws.com/doc/2011-01-01/"
	stsNS      = "https://sts.amazonaws.com/doc/2011-06-15/"
	fakeRole   = "arn:aws:sts::123456789012:assumed-role/gpuheal-controller/botocore-session-1"
)

func newFakeAWS(t *testing.T) *fakeAWS {
	t.Helper()
	f := &fakeAWS{instances: map[string]*fakeInstance{}, faults: map[string][]fakeFault{}, arn: fakeRole, denied: map[string]bool{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	f.URL, f.HTTPClient = srv.URL, srv.Client()
	return f
}

func (f *fakeAWS) add(id string, in fakeInstance) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.instances[id] = &in
}

// instance returns a copy of the instance's state.
func (f *fakeAWS) instance(id string) fakeInstance {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.instances[id]
}

// finishTermination does what AWS does some minutes after a terminate: the
// instance is terminated and leaves its group.
func (f *fakeAWS) finishTermination(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.instances[id]
	in.State, in.Group, in.Lifecycle = "terminated", "", ""
}

// fail makes the next n calls of action answer with status and code.
func (f *fakeAWS) fail(action string, n, status int, code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.faults[action] = append(f.faults[action], fakeFault{status: status, code: code, message: "injected " + code})
	}
}

// loseAnswer makes the next call of action take effect but answer 503.
func (f *fakeAWS) loseAnswer(action string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[action] = append(f.faults[action], fakeFault{status: http.StatusServiceUnavailable, afterApply: true})
}

// deny makes every later call of action fail as IAM refuses it.
func (f *fakeAWS) deny(action string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.denied[action] = true
}

// callsOf returns the recorded calls of action; "" means all.
func (f *fakeAWS) callsOf(action string) []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeCall
	for _, c := range f.calls {
		if action == "" || c.Action == action {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeAWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	action, version := r.PostForm.Get("Action"), r.PostForm.Get("Version")

	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	call := fakeCall{Action: action, Form: r.PostForm, RequestID: fmt.Sprintf("req-%04d", f.seq)}
	call.AccessKey, call.Region, call.Service = credentialScope(r.Header.Get("Authorization"))
	f.calls = append(f.calls, call)
	// Both services also send the request id in this header, which is
	// where the SDK reads it from on success.
	w.Header().Set("X-Amzn-Requestid", call.RequestID)

	a := answer{w: w, requestID: call.RequestID, ec2: version == ec2Version, ns: asgNS}
	if version == stsVersion {
		a.ns = stsNS
	}
	if version != ec2Version && version != asgVersion && version != stsVersion {
		a.fail(http.StatusBadRequest, "InvalidAction", "unknown API version "+version)
		return
	}
	var fault *fakeFault
	if q := f.faults[action]; len(q) > 0 {
		fault, f.faults[action] = &q[0], q[1:]
		if !fault.afterApply {
			a.fail(fault.status, fault.code, fault.message)
			return
		}
	}
	if fault != nil {
		// Apply the action against a recorder that is thrown away, then
		// answer with the fault.
		f.dispatch(action, r.PostForm, answer{w: httptest.NewRecorder(), requestID: call.RequestID, ec2: a.ec2})
		a.fail(fault.status, "", "")
		return
	}
	if f.denied[action] {
		if a.ec2 {
			// EC2 answers so for dry runs too: the permission is checked first.
			a.fail(http.StatusForbidden, "UnauthorizedOperation", "You are not authorized to perform this operation. Encoded authorization failure message: fake")
		} else {
			a.fail(http.StatusForbidden, "AccessDenied", "User: "+f.arn+" is not authorized to perform: "+action)
		}
		return
	}
	f.dispatch(action, r.PostForm, a)
}

func (f *fakeAWS) dispatch(action string, form url.Values, a answer) {
	switch action {
	case "RebootInstances":
		f.rebootInstances(form, a)
	case "DescribeInstances":
		f.describeInstances(form, a)
	case "DescribeAutoScalingInstances":
		f.describeAutoScalingInstances(form, a)
	case "TerminateInstanceInAutoScalingGroup":
		f.terminateInstanceInAutoScalingGroup(form, a)
	case "SetInstanceProtection":
		f.setInstanceProtection(form, a)
	case "GetCallerIdentity":
		f.getCallerIdentity(a)
	default:
		a.fail(http.StatusBadRequest, "InvalidAction", "fake does not implement "+action)
	}
}

// credentialScope reads access key, region and service from
// "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/ec2/aws4_request, ...".
func credentialScope(auth string) (accessKey, region, service string) {
	_, cred, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return "", "", ""
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/")
	if len(parts) != 5 {
		return "", "", ""
	}
	return parts[0], parts[2], parts[3]
}

// answer writes responses in the shape of one service.
type answer struct {
	w         http.ResponseWriter
	requestID string
	ec2       bool
	ns        string // the query services' XML namespace (Auto Scaling, STS)
}

func (a answer) ok(body string) {
	a.w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	fmt.Fprint(a.w, body)
}

func (a answer) fail(status int, code, message string) {
	if code == "" {
		// A bare 5xx, as a load balancer in front of the API sends.
		a.w.WriteHeader(status)
		return
	}
	a.w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	a.w.WriteHeader(status)
	if a.ec2 {
		fmt.Fprintf(a.w, `<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>`,
			esc(code), esc(message), esc(a.requestID))
		return
	}
	fmt.Fprintf(a.w, `<ErrorResponse xmlns="%s"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>%s</RequestId></ErrorResponse>`,
		a.ns, esc(code), esc(message), esc(a.requestID))
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// listed returns the values of a query list: prefix.1, prefix.2, ...
func listed(form url.Values, prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := form[fmt.Sprintf("%s.%d", prefix, i)]
		if !ok {
			return out
		}
		out = append(out, v...)
	}
}
