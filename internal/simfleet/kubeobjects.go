package simfleet

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	v1alpha1 "github.com/gpuheal/gpuheal/api/v1alpha1"
	"github.com/gpuheal/gpuheal/internal/agent/kubecore"
)

// The few fields of batch/v1 Jobs and core/v1 Pods the sim fleet reads,
// as plain JSON through the agent's core REST client: the agent binary
// links no k8s.io/api (cmd/gpuheal-agent/deps_test.go), and these fields
// are a stable part of the API.

// checkJob is the part of a batch/v1 Job the fleet reads.
type checkJob struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ManagedBy             *string `json:"managedBy,omitempty"`
		ActiveDeadlineSeconds *int64  `json:"activeDeadlineSeconds,omitempty"`
		Template              struct {
			Metadata struct {
				Labels      map[string]string `json:"labels,omitempty"`
				Annotations map[string]string `json:"annotations,omitempty"`
			} `json:"metadata"`
			// Spec is kept whole: the pod is made from it.
			Spec json.RawMessage `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
	Status struct {
		StartTime  *metav1.Time `json:"startTime,omitempty"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions,omitempty"`
	} `json:"status"`
}

type checkJobList struct {
	Items []checkJob `json:"items"`
}

// finished: the Job has a Complete or Failed condition that is True.
func (j *checkJob) finished() bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == "Complete" || c.Type == "Failed") && c.Status == "True" {
			return true
		}
	}
	return false
}

// simPod is the part of a core/v1 Pod the fleet reads.
type simPod struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		NodeName   string         `json:"nodeName,omitempty"`
		Containers []podContainer `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase     string       `json:"phase,omitempty"`
		PodIP     string       `json:"podIP,omitempty"`
		StartTime *metav1.Time `json:"startTime,omitempty"`
	} `json:"status"`
}

type podContainer struct {
	Name      string   `json:"name"`
	Image     string   `json:"image,omitempty"`
	Command   []string `json:"command,omitempty"`
	Args      []string `json:"args,omitempty"`
	Resources struct {
		Requests map[string]resource.Quantity `json:"requests,omitempty"`
		Limits   map[string]resource.Quantity `json:"limits,omitempty"`
	} `json:"resources"`
}

type simPodList struct {
	Items []simPod `json:"items"`
}

func (p *simPod) finished() bool { return p.Status.Phase == "Succeeded" || p.Status.Phase == "Failed" }

// jobsPath is batch/v1's jobs, in one namespace or all ("").
func jobsPath(namespace string) []string {
	if namespace == "" {
		return []string{"/apis/batch/v1/jobs"}
	}
	return []string{"/apis/batch/v1/namespaces", namespace, "jobs"}
}

func listCheckJobs(ctx context.Context, c rest.Interface, namespace, selector string) ([]checkJob, error) {
	var l checkJobList
	if err := kubecore.Get(ctx, c.Get().AbsPath(jobsPath(namespace)...).Param("labelSelector", selector), &l); err != nil {
		return nil, fmt.Errorf("listing check Jobs: %w", err)
	}
	return l.Items, nil
}

// patchJobStatus merge-patches the Job's status subresource.
func patchJobStatus(ctx context.Context, c rest.Interface, j *checkJob, status map[string]any) error {
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	path := append(jobsPath(j.Namespace), j.Name, "status")
	if _, err := c.Patch(types.MergePatchType).AbsPath(path...).Body(body).DoRaw(ctx); err != nil {
		return fmt.Errorf("writing the status of Job %s/%s: %w", j.Namespace, j.Name, err)
	}
	return nil
}

// getPod returns the pod, or nil when there is none.
func getPod(ctx context.Context, c rest.Interface, namespace, name string) (*simPod, error) {
	var p simPod
	err := kubecore.Get(ctx, c.Get().Namespace(namespace).Resource("pods").Name(name), &p)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting pod %s/%s: %w", namespace, name, err)
	}
	return &p, nil
}

func createPod(ctx context.Context, c rest.Interface, namespace string, pod map[string]any) error {
	body, err := json.Marshal(pod)
	if err != nil {
		return err
	}
	_, err = c.Post().Namespace(namespace).Resource("pods").Body(body).DoRaw(ctx)
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating a check pod in %s: %w", namespace, err)
	}
	return nil
}

func patchPodStatus(ctx context.Context, c rest.Interface, p *simPod, status map[string]any) error {
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	if _, err := c.Patch(types.MergePatchType).Namespace(p.Namespace).Resource("pods").Name(p.Name).SubResource("status").Body(body).DoRaw(ctx); err != nil {
		return fmt.Errorf("writing the status of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

func deletePod(ctx context.Context, c rest.Interface, p *simPod) error {
	_, err := c.Delete().Namespace(p.Namespace).Resource("pods").Name(p.Name).DoRaw(ctx)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// node is the node the check tests: the annotation holds its whole name;
// the label, cut and hashed past 63 characters, is the fallback.
func (j *checkJob) node() string {
	if n := j.Annotations[v1alpha1.AnnotationCheckNodeName]; n != "" {
		return n
	}
	return j.Labels[v1alpha1.LabelCheckNode]
}
