// test_example of test-backend-ops: the bare minimum of a case, kept as the model for a new
// one. It is in neither case list (ggml's isn't either).
//
// To add an op: write a class like this one in the family's file (its `op` is what
// op_desc(out) prints, vars() its parameters in VARS_TO_STR order, floats marked with
// float()), create inputs with this.newTensor* so test mode puts sentinels after them, call
// a.setParam() on inputs whose gradients grad mode should check, then add instances to
// makeTestCasesEval() in ../lists.ts in ggml's order and an entry (its OP names, parameter
// kinds, constructor) to CASE_REGISTRY in ../parse-name.ts, so conformance mode can build it
// from its name.

import type { Context, GgmlType, Tensor } from 'weft-ml';
import type { Vars } from '../format.js';
import { named, TestCase, type Ne4 } from '../test-case.js';

// GGML_OP_EXAMPLE
export class TestExample extends TestCase {
  readonly op = 'ADD';

  constructor(
    readonly type: GgmlType = 'f32', // The type of the input tensors.
    readonly ne: Ne4 = [10, 5, 4, 3], // The shape of the input tensors.
  ) {
    super();
  }

  // Put all parameters that define the case here, in the order the name shows them.
  vars(): Vars {
    return { type: this.type, ne: this.ne };
  }

  buildGraph(ctx: Context): Tensor {
    // Step 1: create input tensors that don't depend on any other tensors:
    const a = named(this.newTensor(ctx, this.type, this.ne), 'a'); // names are optional but help debugging
    const b = named(this.newTensor(ctx, this.type, this.ne), 'b');
    // Step 2: use the op that you want to test in the graph.
    const out = named(ctx.add(a, b), 'out');
    // Step 3: return the output tensor.
    return out;
  }
}
