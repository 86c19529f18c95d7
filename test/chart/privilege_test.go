//go:build integration

package chart

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestAgentLeastPrivilege holds the chart to what docs/install.md
// promises, in every value set: the agent never shares the host's PID,
// network or IPC namespace, its root file system is read-only, it mounts
// only the host paths it reads (read-only) and its state directory, and it
// is privileged only when the operator chose
// agent.kernelLog.access=privileged or agent.driverRoot (the driver's
// device nodes reach a container without the NVIDIA toolkit no other
// way). Otherwise every capability is dropped
// but SYSLOG, and that only where the kernel log is read with it (syslog(2),
// the device plugin's /dev/kmsg).
func TestAgentLeastPrivilege(t *testing.T) {
	allowedHostPaths := map[string]bool{
		"/proc": false, "/dev": false, "/dev/kmsg": false, "/var/log": false, "/sys": false, // read-only
		"/var/lib/kubelet/pod-resources": false, // read-only: the kubelet's socket
		"/var/lib/gpuheal":               true,  // written: kernel-log position, fatal findings
	}
	for _, vs := range valueSets {
		if vs.driverRoot != "" {
			allowedHostPaths[vs.driverRoot] = false // read-only
		}
	}
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			objs := decode(t, render(t, vs.args...))
			ds := find(t, objs, "DaemonSet", "gpuheal-agent")
			spec, _, _ := unstructured.NestedMap(ds.Object, "spec", "template", "spec")
			for _, f := range []string{"hostPID", "hostNetwork", "hostIPC"} {
				if v, _ := spec[f].(bool); v {
					t.Errorf("agent pod sets %s", f)
				}
			}
			access := vs.kernelLog
			c := container(t, ds, "agent")
			sc, _, _ := unstructured.NestedMap(c, "securityContext")
			if ro, _ := sc["readOnlyRootFilesystem"].(bool); !ro {
				t.Error("agent root file system is writable")
			}
			privileged, _ := sc["privileged"].(bool)
			if want := access == "privileged" || vs.driverRoot != ""; privileged != want {
				t.Errorf("kernelLog.access=%s, driverRoot=%q: privileged=%v", access, vs.driverRoot, privileged)
			}
			if !privileged {
				if ape, ok := sc["allowPrivilegeEscalation"].(bool); !ok || ape {
					t.Error("allowPrivilegeEscalation is not false")
				}
				drop, _, _ := unstructured.NestedStringSlice(sc, "capabilities", "drop")
				add, _, _ := unstructured.NestedStringSlice(sc, "capabilities", "add")
				if !slices.Equal(drop, []string{"ALL"}) {
					t.Errorf("capabilities.drop = %v, want [ALL]", drop)
				}
				want := []string(nil)
				if access == "devicePlugin" || access == "syslog" {
					want = []string{"SYSLOG"}
				}
				if !slices.Equal(add, want) {
					t.Errorf("kernelLog.access=%s: capabilities.add = %v, want %v", access, add, want)
				}
			}
			if seccomp, _, _ := unstructured.NestedString(spec, "securityContext", "seccompProfile", "type"); seccomp != "RuntimeDefault" {
				t.Errorf("pod seccompProfile = %q, want RuntimeDefault", seccomp)
			}

			// Host paths: only the allowed ones, and written only where allowed.
			hostPath := map[string]string{} // volume name → host path
			vols, _, _ := unstructured.NestedSlice(spec, "volumes")
			for _, v := range vols {
				if p, ok, _ := unstructured.NestedString(v.(map[string]any), "hostPath", "path"); ok {
					name := v.(map[string]any)["name"].(string)
					if _, allowed := allowedHostPaths[p]; !allowed {
						t.Errorf("volume %s mounts host path %s", name, p)
					}
					hostPath[name] = p
				}
			}
			mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts")
			for _, m := range mounts {
				mm := m.(map[string]any)
				p, ok := hostPath[mm["name"].(string)]
				if !ok {
					continue
				}
				if ro, _ := mm["readOnly"].(bool); !ro && !allowedHostPaths[p] {
					t.Errorf("host path %s is mounted writable at %s", p, mm["mountPath"])
				}
			}
		})
	}
}

// TestDefaultRenderHasNoPrivilegedPod: with the chart's defaults no
// container of any pod (DaemonSet, Deployment, hook Job) is privileged,
// may escalate, or adds a capability but the agent's SYSLOG.
func TestDefaultRenderHasNoPrivilegedPod(t *testing.T) {
	objs := decode(t, render(t))
	pods := 0
	for _, o := range objs {
		path := []string{"spec", "template", "spec"}
		if o.GetKind() == "Pod" {
			path = []string{"spec"}
		}
		spec, ok, _ := unstructured.NestedMap(o.Object, path...)
		if !ok {
			continue
		}
		pods++
		for _, field := range []string{"initContainers", "containers"} {
			cs, _, _ := unstructured.NestedSlice(spec, field)
			for _, c := range cs {
				cm := c.(map[string]any)
				where := o.GetKind() + " " + o.GetName() + " container " + cm["name"].(string)
				sc, _, _ := unstructured.NestedMap(cm, "securityContext")
				if p, _ := sc["privileged"].(bool); p {
					t.Errorf("%s is privileged", where)
				}
				if ape, ok := sc["allowPrivilegeEscalation"].(bool); !ok || ape {
					t.Errorf("%s does not set allowPrivilegeEscalation: false", where)
				}
				add, _, _ := unstructured.NestedStringSlice(sc, "capabilities", "add")
				want := []string(nil)
				if o.GetName() == "gpuheal-agent" {
					want = []string{"SYSLOG"} // syslog(2): read the kernel log
				}
				if !slices.Equal(add, want) {
					t.Errorf("%s adds capabilities %v, want %v", where, add, want)
				}
			}
		}
	}
	if pods < 2 {
		t.Fatalf("found %d pod templates in the default render, want the agent's and the controller's at least", pods)
	}
}

// TestControllerUnprivileged: the controller needs nothing from its node.
func TestControllerUnprivileged(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			objs := decode(t, render(t, vs.args...))
			d := find(t, objs, "Deployment", "gpuheal-controller")
			spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
			if nonRoot, _, _ := unstructured.NestedBool(spec, "securityContext", "runAsNonRoot"); !nonRoot {
				t.Error("controller may run as root")
			}
			vols, _, _ := unstructured.NestedSlice(spec, "volumes")
			for _, v := range vols {
				if _, ok := v.(map[string]any)["hostPath"]; ok {
					t.Errorf("controller mounts a host path: %v", v)
				}
			}
			sc, _, _ := unstructured.NestedMap(container(t, d, "controller"), "securityContext")
			drop, _, _ := unstructured.NestedStringSlice(sc, "capabilities", "drop")
			if p, _ := sc["privileged"].(bool); p || sc["allowPrivilegeEscalation"] != false ||
				sc["readOnlyRootFilesystem"] != true || !slices.Equal(drop, []string{"ALL"}) {
				t.Errorf("controller securityContext %v", sc)
			}
		})
	}
}

// TestAgentDriverRootMode: with agent.driverRoot the pod does not depend
// on the NVIDIA container toolkit, which cannot inject a broken driver
// and would fail the container's start: no RuntimeClass, the toolkit
// told to leave the container alone (NVIDIA_VISIBLE_DEVICES=void, also
// where it is the node's default runtime), the driver directory mounted
// read-only where --driver-root looks.
func TestAgentDriverRootMode(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			ds := find(t, decode(t, render(t, vs.args...)), "DaemonSet", "gpuheal-agent")
			rc, _, _ := unstructured.NestedString(ds.Object, "spec", "template", "spec", "runtimeClassName")
			args := containerArgs(t, ds, "agent")
			c := container(t, ds, "agent")
			visible := ""
			env, _, _ := unstructured.NestedSlice(c, "env")
			for _, e := range env {
				if m := e.(map[string]any); m["name"] == "NVIDIA_VISIBLE_DEVICES" {
					visible, _ = m["value"].(string)
				}
			}
			if vs.driverRoot == "" {
				if visible == "void" || slices.Contains(args, "--driver-root=/host/driver") {
					t.Errorf("toolkit mode: runtimeClassName %q, NVIDIA_VISIBLE_DEVICES %q, args %v", rc, visible, args)
				}
				return
			}
			if rc != "" {
				t.Errorf("runtimeClassName %q in driver-root mode, want none", rc)
			}
			if visible != "void" {
				t.Errorf("NVIDIA_VISIBLE_DEVICES = %q, want void", visible)
			}
			if !slices.Contains(args, "--driver-root=/host/driver") {
				t.Errorf("args %v lack --driver-root=/host/driver", args)
			}
			mounted := false
			vols, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "volumes")
			for _, v := range vols {
				vm := v.(map[string]any)
				if p, _, _ := unstructured.NestedString(vm, "hostPath", "path"); p == vs.driverRoot {
					mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts")
					for _, m := range mounts {
						mm := m.(map[string]any)
						if mm["name"] == vm["name"] && mm["mountPath"] == "/host/driver" && mm["readOnly"] == true {
							mounted = true
						}
					}
				}
			}
			if !mounted {
				t.Errorf("host %s is not mounted read-only at /host/driver", vs.driverRoot)
			}
		})
	}
}
