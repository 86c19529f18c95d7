// Package predict estimates, per GPU, the risk that the GPU fails within
// the next 30 minutes, from the same telemetry the agent exports.
//
// The agent keeps one State per GPU, feeds it one Sample per collection
// interval and scores the features it returns:
//
//	m, err := predict.Default()            // the model shipped with gpuheal
//	st := predict.NewState()               // one per GPU (UUID); a new GPU gets a new State
//	...
//	s := predict.SampleFromSnapshot(snap.Time, &snap.GPUs[i])
//	risk := m.Score(st.Update(&s))         // probability-like, 0..1
//	alarm := risk >= m.Threshold
//
// Features are computed by State alone — training (internal/predict/train)
// and evaluation (internal/predict/evaluate) feed the same State from
// traces, so the agent and the trainer cannot compute them differently.
// BatchFeatures is a slow, literal restatement of the same definitions that
// tests compare State against.
//
// This package imports nothing of gpuheal's but the GPU types; trace
// storage, training and evaluation live in subpackages.
package predict
