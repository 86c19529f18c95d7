package analyzer

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// One environment per scope, so that a gpu rule naming `finding` (or a
// node rule naming `gpu`) fails at load with CEL's "undeclared reference"
// instead of at every evaluation. They are built once per process and
// extend one base: the standard library is the bulk of CEL's memory.
var (
	baseEnv = sync.OnceValues(func() (*cel.Env, error) {
		return cel.NewEnv(
			cel.Variable("node", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("findings", cel.ListType(cel.DynType)),
			cel.Variable("expectedDriverVersion", cel.StringType),
			// Readings come in int and double; without this "temp > 90"
			// on a double would need "90.0".
			cel.CrossTypeNumericComparisons(true),
			cel.Function("hasBits",
				cel.Overload("hasBits_int_int", []*cel.Type{cel.IntType, cel.IntType}, cel.BoolType,
					cel.BinaryBinding(hasBits))),
		)
	})
	gpuEnv = sync.OnceValues(func() (*cel.Env, error) {
		return extend(
			cel.Variable("gpu", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("gpuFindings", cel.ListType(cel.DynType)),
			cel.Variable("delta", cel.MapType(cel.StringType, cel.IntType)),
			cel.Variable("seconds", cel.DoubleType),
		)
	})
	nodeEnv = sync.OnceValues(func() (*cel.Env, error) {
		return extend(cel.Variable("gpus", cel.ListType(cel.DynType)))
	})
	portEnv = sync.OnceValues(func() (*cel.Env, error) {
		return extend(
			cel.Variable("device", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("port", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("delta", cel.MapType(cel.StringType, cel.IntType)),
			cel.Variable("hwDelta", cel.MapType(cel.StringType, cel.IntType)),
			cel.Variable("seconds", cel.DoubleType),
		)
	})
	findingEnv = sync.OnceValues(func() (*cel.Env, error) {
		return extend(cel.Variable("finding", cel.MapType(cel.StringType, cel.DynType)))
	})
)

func extend(opts ...cel.EnvOption) (*cel.Env, error) {
	base, err := baseEnv()
	if err != nil {
		return nil, err
	}
	return base.Extend(opts...)
}

func scopeEnv(s Scope) (*cel.Env, error) {
	switch s {
	case ScopeGPU:
		return gpuEnv()
	case ScopeNode:
		return nodeEnv()
	case ScopeFinding:
		return findingEnv()
	case ScopePort:
		return portEnv()
	}
	return nil, fmt.Errorf("unknown scope %q", s)
}

// hasBits(x, mask) is true when every bit of mask is set in x. CEL has no
// bitwise operators, and clock event reasons are a bitmask.
func hasBits(x, mask ref.Val) ref.Val {
	a, ok1 := x.(types.Int)
	b, ok2 := mask.(types.Int)
	if !ok1 || !ok2 {
		return types.NewErr("hasBits: want (int, int)")
	}
	return types.Bool(int64(a)&int64(b) == int64(b))
}
