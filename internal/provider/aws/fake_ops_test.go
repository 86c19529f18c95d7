package aws

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// The fake's operations. The caller holds f.mu.

var ec2StateCodes = map[string]int{
	"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80,
}

func (f *fakeAWS) rebootInstances(form url.Values, a answer) {
	ids := listed(form, "InstanceId")
	if len(ids) == 0 {
		a.fail(http.StatusBadRequest, "MissingParameter", "The request must contain the parameter InstanceId")
		return
	}
	for _, id := range ids {
		if in, ok := f.instances[id]; !ok || in.State == "terminated" {
			a.fail(http.StatusBadRequest, "InvalidInstanceID.NotFound", fmt.Sprintf("The instance ID '%s' does not exist", id))
			return
		}
	}
	if form.Get("DryRun") == "true" {
		// EC2's answer when the caller may do it: an error, by design.
		a.fail(http.StatusPreconditionFailed, "DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
		return
	}
	for _, id := range ids {
		f.instances[id].Reboots++
	}
	a.ok(fmt.Sprintf(`<RebootInstancesResponse xmlns="%s"><requestId>%s</requestId><return>true</return></RebootInstancesResponse>`,
		ec2NS, a.requestID))
}

func (f *fakeAWS) describeInstances(form url.Values, a answer) {
	var items strings.Builder
	for _, id := range listed(form, "InstanceId") {
		in, ok := f.instances[id]
		if !ok {
			a.fail(http.StatusBadRequest, "InvalidInstanceID.NotFound", fmt.Sprintf("The instance ID '%s' does not exist", id))
			return
		}
		reason := ""
		if in.State == "shutting-down" || in.State == "terminated" {
			reason = `<stateReason><code>Client.UserInitiatedShutdown</code><message>Client.UserInitiatedShutdown: User initiated shutdown</message></stateReason>`
		}
		fmt.Fprintf(&items, `<item><reservationId>r-%s</reservationId><ownerId>123456789012</ownerId><groupSet/><instancesSet><item>`+
			`<instanceId>%s</instanceId><instanceType>p5.48xlarge</instanceType>`+
			`<instanceState><code>%d</code><name>%s</name></instanceState>%s`+
			`<placement><availabilityZone>%s</availabilityZone></placement>`+
			`</item></instancesSet></item>`,
			esc(strings.TrimPrefix(id, "i-")), esc(id), ec2StateCodes[in.State], esc(in.State), reason, esc(in.Zone))
	}
	a.ok(fmt.Sprintf(`<DescribeInstancesResponse xmlns="%s"><requestId>%s</requestId><reservationSet>%s</reservationSet></DescribeInstancesResponse>`,
		ec2NS, a.requestID, items.String()))
}

func (f *fakeAWS) describeAutoScalingInstances(form url.Values, a answer) {
	var members strings.Builder
	for _, id := range listed(form, "InstanceIds.member") {
		in, ok := f.instances[id]
		if !ok || in.Group == "" {
			continue // AWS ignores unknown ids
		}
		fmt.Fprintf(&members, `<member><InstanceId>%s</InstanceId><InstanceType>p5.48xlarge</InstanceType>`+
			`<AutoScalingGroupName>%s</AutoScalingGroupName><AvailabilityZone>%s</AvailabilityZone>`+
			`<LifecycleState>%s</LifecycleState><HealthStatus>HEALTHY</HealthStatus>`+
			`<ProtectedFromScaleIn>%t</ProtectedFromScaleIn></member>`,
			esc(id), esc(in.Group), esc(in.Zone), esc(in.Lifecycle), in.Protected)
	}
	a.ok(fmt.Sprintf(`<DescribeAutoScalingInstancesResponse xmlns="%s"><DescribeAutoScalingInstancesResult>`+
		`<AutoScalingInstances>%s</AutoScalingInstances></DescribeAutoScalingInstancesResult>`+
		`<ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></DescribeAutoScalingInstancesResponse>`,
		asgNS, members.String(), a.requestID))
}

func (f *fakeAWS) terminateInstanceInAutoScalingGroup(form url.Values, a answer) {
	id := form.Get("InstanceId")
	decrement := form.Get("ShouldDecrementDesiredCapacity")
	if decrement != "true" && decrement != "false" {
		a.fail(http.StatusBadRequest, "ValidationError", "ShouldDecrementDesiredCapacity is required")
		return
	}
	in, ok := f.instances[id]
	if !ok || in.Group == "" {
		a.fail(http.StatusBadRequest, "ValidationError", "Instance Id not found - No managed instance found for instance ID: "+id)
		return
	}
	// What AWS answers here is not documented; an error is the cautious
	// assumption, and the provider must not terminate twice either way.
	if strings.HasPrefix(in.Lifecycle, "Terminat") {
		a.fail(http.StatusBadRequest, "ValidationError", "The instance "+id+" is already terminating")
		return
	}
	in.Lifecycle, in.State = "Terminating", "shutting-down"
	in.Terminations++
	if decrement == "false" {
		in.Replacements++
	}
	activity := fmt.Sprintf("act-%s-%d", strings.TrimPrefix(id, "i-"), in.Terminations)
	a.ok(fmt.Sprintf(`<TerminateInstanceInAutoScalingGroupResponse xmlns="%s"><TerminateInstanceInAutoScalingGroupResult>`+
		`<Activity><ActivityId>%s</ActivityId><AutoScalingGroupName>%s</AutoScalingGroupName>`+
		`<Description>Terminating EC2 instance: %s</Description><Cause>At 2026-01-01T00:00:00Z instance %s was taken out of service in response to a user request.</Cause>`+
		`<StartTime>2026-01-01T00:00:00Z</StartTime><StatusCode>InProgress</StatusCode><Progress>0</Progress></Activity>`+
		`</TerminateInstanceInAutoScalingGroupResult><ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata>`+
		`</TerminateInstanceInAutoScalingGroupResponse>`,
		asgNS, esc(activity), esc(in.Group), esc(id), esc(id), a.requestID))
}

// setInstanceProtection checks, as AWS does, that every instance is in the
// named group before it changes any.
func (f *fakeAWS) setInstanceProtection(form url.Values, a answer) {
	group, ids := form.Get("AutoScalingGroupName"), listed(form, "InstanceIds.member")
	protected := form.Get("ProtectedFromScaleIn")
	if group == "" || len(ids) == 0 || (protected != "true" && protected != "false") {
		a.fail(http.StatusBadRequest, "ValidationError", "AutoScalingGroupName, InstanceIds and ProtectedFromScaleIn are required")
		return
	}
	for _, id := range ids {
		if in, ok := f.instances[id]; !ok || in.Group != group {
			a.fail(http.StatusBadRequest, "ValidationError", fmt.Sprintf("The instance %s is not part of Auto Scaling group %s.", id, group))
			return
		}
	}
	for _, id := range ids {
		f.instances[id].Protected = protected == "true"
	}
	a.ok(fmt.Sprintf(`<SetInstanceProtectionResponse xmlns="%s"><SetInstanceProtectionResult/>`+
		`<ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></SetInstanceProtectionResponse>`,
		asgNS, a.requestID))
}

func (f *fakeAWS) getCallerIdentity(a answer) {
	account := strings.Split(f.arn, ":")[4]
	a.ok(fmt.Sprintf(`<GetCallerIdentityResponse xmlns="%s"><GetCallerIdentityResult><Arn>%s</Arn>`+
		`<UserId>AROAFAKE:botocore-session-1</UserId><Account>%s</Account></GetCallerIdentityResult>`+
		`<ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata></GetCallerIdentityResponse>`,
		stsNS, esc(f.arn), esc(account), a.requestID))
}
