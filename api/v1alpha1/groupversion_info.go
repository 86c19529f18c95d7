// Package v1alpha1 holds gpuheal's API types in group gpuheal.io:
// RemediationPolicy (cluster-scoped) and NodeRemediation (one per incident).
// It depends only on apimachinery, so clients can import it cheaply.
// +kubebuilder:object:generate=true
// +groupName=gpuheal.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of these types.
var GroupVersion = schema.GroupVersion{Group: "gpuheal.io", Version: "v1alpha1"}

var (
	// SchemeBuilder collects the functions that add our types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
	// knownTypes is filled by the files that define types.
	knownTypes []runtime.Object
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, knownTypes...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
