// The side-by-side tool's parsing (bench/): ggml's perf lines as its binary prints them
// (colors included) and the command line.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parsePerfLine } from '../bench/ggml-perf.js';
import { parseVsArgs } from '../bench/vs-ggml.js';

describe('bench --vs-ggml', () => {
  test('perf lines parse into case name and us/run', () => {
    const line =
      '  MUL_MAT(type_a=q4_0,type_b=f32,m=4096,n=1,k=14336,bs=[1,1],nr=[1,1],per=[0,1,2,3]):                 69 runs - 45682.52 us/run - 117.44 MFLOP/run - \x1b[1;34m  2.57 GFLOPS\x1b[0m';
    assert.deepEqual(
      { ...parsePerfLine(line)!, text: '' },
      { name: 'MUL_MAT(type_a=q4_0,type_b=f32,m=4096,n=1,k=14336,bs=[1,1],nr=[1,1],per=[0,1,2,3])', us: 45682.52, text: '' },
    );
    assert.equal(parsePerfLine('  ADD(type=f32,ne=[4096,1,1,1],nr=[1,1,1,1]): not supported')!.us, null);
    assert.equal(parsePerfLine('Backend 2/2: CPU'), null);
    assert.equal(parsePerfLine('  Device description: Intel(R) Xeon(R) Processor'), null);
  });

  test('arguments: PATH required, filters and limits passed through', () => {
    assert.deepEqual(parseVsArgs(['--vs-ggml', '/x/test-backend-ops', '-o', 'MUL_MAT', '-p', 'type_a=f16', '--rounds', '2', '--max-minutes', '30']), {
      bin: '/x/test-backend-ops',
      rounds: 2,
      op: 'MUL_MAT',
      params: 'type_a=f16',
      maxMinutes: 30,
    });
    assert.equal(typeof parseVsArgs(['--rounds', '2']), 'string');
    assert.equal(typeof parseVsArgs(['--vs-ggml', 'x', '--rounds', '0']), 'string');
    assert.equal(typeof parseVsArgs(['--vs-ggml']), 'string');
  });
});
