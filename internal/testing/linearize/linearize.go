// Package linearize owns the porcupine model of a znode used as a register: reads (sync +
// getData), writes (setData with version -1) and compare-and-set (setData with an expected
// version). Operations whose outcome the client never learned (connection lost) may or may
// not have taken effect, so the model is nondeterministic for them.
package linearize

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// Kind is an operation kind.
type Kind int

const (
	Get Kind = iota
	Set
	CAS
)

// Input is one operation on one znode.
type Input struct {
	Key     string
	Kind    Kind
	Value   string
	Version int32 // CAS: the expected version
}

// Result is how an operation ended.
type Result int

const (
	OK Result = iota
	BadVersion
	Unknown // the client does not know whether a write took effect
)

// Output is what the client saw.
type Output struct {
	Result  Result
	Value   string // Get
	Version int32  // Get: the node's version; Set/CAS OK: the new version
}

type register struct {
	value   string
	version int32
}

// Model is the register model, partitioned by znode.
var Model = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(Input).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []interface{} { return []interface{}{register{}} },
	Step: func(state, input, output interface{}) []interface{} {
		st := state.(register)
		in := input.(Input)
		out := output.(Output)
		next := register{value: in.Value, version: st.version + 1}
		switch in.Kind {
		case Get:
			if out.Value == st.value && out.Version == st.version {
				return []interface{}{st}
			}
			return nil
		case Set:
			switch out.Result {
			case OK:
				if out.Version != next.version {
					return nil
				}
				return []interface{}{next}
			case Unknown:
				return []interface{}{st, next}
			}
			return nil
		case CAS:
			match := st.version == in.Version
			switch out.Result {
			case OK:
				if !match || out.Version != next.version {
					return nil
				}
				return []interface{}{next}
			case BadVersion:
				if match {
					return nil
				}
				return []interface{}{st}
			case Unknown:
				if match {
					return []interface{}{st, next}
				}
				return []interface{}{st}
			}
		}
		return nil
	},
	Equal: func(a, b interface{}) bool { return a.(register) == b.(register) },
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(Input), output.(Output)
		res := [...]string{"ok", "badversion", "unknown"}[out.Result]
		switch in.Kind {
		case Get:
			return fmt.Sprintf("get(%s) -> %q v%d", in.Key, out.Value, out.Version)
		case Set:
			return fmt.Sprintf("set(%s, %q) -> %s v%d", in.Key, in.Value, res, out.Version)
		default:
			return fmt.Sprintf("cas(%s, v%d, %q) -> %s v%d", in.Key, in.Version, in.Value, res, out.Version)
		}
	},
	DescribeState: func(s interface{}) string { r := s.(register); return fmt.Sprintf("%q v%d", r.value, r.version) },
}

// Check reports whether a history is linearizable.
func Check(history []porcupine.Operation) bool {
	return porcupine.CheckOperations(Model.ToModel(), history)
}
