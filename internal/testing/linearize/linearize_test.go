package linearize

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

func op(client int, call, ret int64, in Input, out Output) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Call: call, Return: ret, Input: in, Output: out}
}

func TestModel(t *testing.T) {
	k := "/r"
	good := []porcupine.Operation{
		op(0, 0, 10, Input{Key: k, Kind: Set, Value: "a"}, Output{Result: OK, Version: 1}),
		op(1, 5, 15, Input{Key: k, Kind: Get}, Output{Value: "a", Version: 1}), // concurrent: either
		op(1, 20, 30, Input{Key: k, Kind: CAS, Version: 1, Value: "b"}, Output{Result: OK, Version: 2}),
		op(0, 21, 29, Input{Key: k, Kind: CAS, Version: 1, Value: "c"}, Output{Result: BadVersion}),
		op(2, 25, 1000, Input{Key: k, Kind: Set, Value: "lost?"}, Output{Result: Unknown}),
		op(0, 40, 50, Input{Key: k, Kind: Get}, Output{Value: "b", Version: 2}),
	}
	if !Check(good) {
		t.Fatal("a linearizable history was rejected")
	}
	stale := []porcupine.Operation{
		op(0, 0, 10, Input{Key: k, Kind: Set, Value: "a"}, Output{Result: OK, Version: 1}),
		op(0, 20, 30, Input{Key: k, Kind: Set, Value: "b"}, Output{Result: OK, Version: 2}),
		op(1, 40, 50, Input{Key: k, Kind: Get}, Output{Value: "a", Version: 1}), // stale
	}
	if Check(stale) {
		t.Fatal("a stale read was accepted")
	}
	lostWrite := []porcupine.Operation{
		op(0, 0, 10, Input{Key: k, Kind: Set, Value: "a"}, Output{Result: OK, Version: 1}),
		op(1, 20, 30, Input{Key: k, Kind: Get}, Output{Value: "", Version: 0}), // acked write vanished
	}
	if Check(lostWrite) {
		t.Fatal("a lost acknowledged write was accepted")
	}
	// An unknown write may have happened after all.
	unknownApplied := []porcupine.Operation{
		op(0, 0, 1000, Input{Key: k, Kind: Set, Value: "x"}, Output{Result: Unknown}),
		op(1, 20, 30, Input{Key: k, Kind: Get}, Output{Value: "x", Version: 1}),
	}
	if !Check(unknownApplied) {
		t.Fatal("an unknown write that took effect was rejected")
	}
}
