// Package train fits the failure predictor on labelled traces: one
// streaming pass computes features with predict.State — the code the
// agent runs — and keeps a stratified, weighted sample of rows; package
// gbt fits gradient-boosted trees to them; a second pass scores every
// sample of held-out GPU slots to choose the operating threshold by the
// event-level definitions of package evaluate.
package train
