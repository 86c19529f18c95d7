package v1alpha1

// DriverUpgradeMaintenance reports whether a node whose
// LabelNvidiaDriverUpgradeState is state is in the GPU Operator's hands:
// from cordon-required, when the operator starts taking it out of service,
// through uncordon-required, when it gives it back. upgrade-required only
// queues the node (nothing is done to it yet, and a node may wait there for
// hours behind maxParallelUpgrades); upgrade-done, upgrade-failed and no
// label are not maintenance: a failed upgrade leaves a node gpuheal should
// judge like any other.
func DriverUpgradeMaintenance(state string) bool {
	switch state {
	case DriverUpgradeCordonRequired, DriverUpgradeWaitForJobsRequired, DriverUpgradePodDeletionRequired,
		DriverUpgradeDrainRequired, DriverUpgradeNodeMaintenanceRequired, DriverUpgradePostMaintenanceRequired,
		DriverUpgradePodRestartRequired, DriverUpgradeValidationRequired, DriverUpgradeUncordonRequired:
		return true
	}
	return false
}

// DriverUpgradeReleasesDriver reports whether the agent on a node in state
// must let go of the driver (nvmlShutdown): from pod-deletion-required,
// when the node's GPU pods are being removed so that the driver can be
// unloaded (an open NVML handle keeps the kernel module busy), through
// validation-required, while the new driver comes up. Before that (cordon,
// waiting for jobs) the old driver still runs work worth watching; from
// uncordon-required on the new driver has passed the operator's validation.
func DriverUpgradeReleasesDriver(state string) bool {
	switch state {
	case DriverUpgradePodDeletionRequired, DriverUpgradeDrainRequired, DriverUpgradeNodeMaintenanceRequired,
		DriverUpgradePostMaintenanceRequired, DriverUpgradePodRestartRequired, DriverUpgradeValidationRequired:
		return true
	}
	return false
}
