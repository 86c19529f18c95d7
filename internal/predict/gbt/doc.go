// Package gbt fits gradient-boosted regression trees for binary
// classification (logistic loss, Newton leaf values, histogram splits):
// the algorithm of XGBoost and LightGBM in a few hundred lines of Go, with
// no dependencies. It knows nothing of GPUs; internal/predict/train feeds
// it feature rows and turns its trees into a predict.File.
package gbt
