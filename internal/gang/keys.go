package gang

// Label and annotation keys other projects put on their pods, checked
// against their sources (JobSet v0.11.1 api/jobset/v1alpha2, LeaderWorkerSet
// v0.8.0 api/leaderworkerset/v1, Kueue v0.17.0 pkg/controller/constants and
// pkg/controller/jobs/pod/constants, Volcano apis v1.14.0
// pkg/apis/scheduling/v1beta1/labels.go, Kubernetes batch/v1).
const (
	// LabelJobSetName is the JobSet a pod's Job belongs to.
	LabelJobSetName = "jobset.sigs.k8s.io/jobset-name"
	// LabelJobSetUID is that JobSet's UID; it tells a JobSet from an older
	// one of the same name.
	LabelJobSetUID = "jobset.sigs.k8s.io/jobset-uid"

	// LabelLWSName is the LeaderWorkerSet of a leader or worker pod.
	LabelLWSName = "leaderworkerset.sigs.k8s.io/name"
	// LabelLWSGroupIndex is the pod's group (one leader and its workers).
	LabelLWSGroupIndex = "leaderworkerset.sigs.k8s.io/group-index"

	// LabelJobName is the Job of a pod (Kubernetes 1.27 and later; older
	// pods carry LabelLegacyJobName).
	LabelJobName       = "batch.kubernetes.io/job-name"
	LabelLegacyJobName = "job-name"
	// LabelJobControllerUID is the UID of the pod's Job.
	LabelJobControllerUID = "batch.kubernetes.io/controller-uid"

	// LabelKueuePodGroup is the pod group (and its Workload's name) of
	// plain pods Kueue admits as one.
	LabelKueuePodGroup = "kueue.x-k8s.io/pod-group-name"
	// AnnotationKueuePodGroupTotal is how many pods that group has.
	AnnotationKueuePodGroupTotal = "kueue.x-k8s.io/pod-group-total-count"
	// LabelKueuePrebuiltWorkload names the Workload made ahead for a pod
	// or job (Kueue puts it on LeaderWorkerSet pods, users on others).
	LabelKueuePrebuiltWorkload = "kueue.x-k8s.io/prebuilt-workload-name"
	// LabelKueueJobUID on a Workload is the UID of the job it admits.
	LabelKueueJobUID = "kueue.x-k8s.io/job-uid"

	// AnnotationVolcanoGroup names a pod's Volcano PodGroup;
	// AnnotationVolcanoGroupAlt is the same under Volcano's own group.
	AnnotationVolcanoGroup    = "scheduling.k8s.io/group-name"
	AnnotationVolcanoGroupAlt = "scheduling.volcano.sh/group-name"
)
