// Module codegen pins controller-gen, which generates api/v1alpha1's deep
// copies and the CRD manifests. It is a module of its own so its
// dependencies never touch the main module's or the control plane's.
package codegen
