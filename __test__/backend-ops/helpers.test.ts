// The suite's own machinery: ggml's number formatting, the error measures, the node
// comparison of test mode (it must fail on what ggml fails on), tensor initialization rules
// and the PRNG.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Backend, Context, UnaryOp, type NodeComparison, type OpName, type Tensor } from '../../index.js';
import { fixed, float, sanitizeName, setColor, varsToStr } from './format.js';
import { f32ToBf16, f32ToF16 } from './ggml-types.js';
import { compareNode, evalTest } from './modes/test.js';
import { perfAlign } from './modes/perf.js';
import { Rng } from './rng.js';
import { initTensorUniform, meanAbsAsymm, nmse } from './tensor-data.js';
import { quietGpuDrivers, run } from './runner.js';
import { hasAutodiff } from './capabilities.js';
import { TestArange } from './cases/generate.js';
import { TestCpy } from './cases/copy.js';
import { TestOptStepAdamw } from './cases/training.js';
import { TestSqr } from './cases/unary.js';
import { evalGrad, fdIndices } from './modes/grad.js';
import { evalSupport } from './modes/support.js';
import { compareWithReference } from './modes/conformance.js';
import { TestCase } from './test-case.js';
import type { Vars } from './format.js';

quietGpuDrivers();
setColor(false);

const unaryOps: string[] = Object.values(UnaryOp);
const node = (op: OpName | UnaryOp, a: number[], b: number[]): NodeComparison => ({
  index: 0,
  op: unaryOps.includes(op) ? 'UNARY' : (op as OpName),
  opDesc: op,
  name: op === 'NONE' ? 'sent_3' : 'out',
  a: Float32Array.from(a),
  b: Float32Array.from(b),
});

describe('format', () => {
  test('floats print as C "%f", ints and bools as std::to_string, arrays as [a,b]', () => {
    assert.equal(fixed(Math.fround(1.4245)), '1.424500');
    assert.equal(fixed(Math.fround(1e-8)), '0.000000');
    assert.equal(fixed(-0), '-0.000000');
    assert.equal(fixed(Math.fround(0.1), 9), '0.100000001');
    const vars = { type: 'q4_0', ne: [16, 1, 256, 1], b: true, v: false, scale: float(0.1), max_bias: float(-8) };
    assert.equal(varsToStr(vars), 'type=q4_0,ne=[16,1,256,1],b=1,v=0,scale=0.100000,max_bias=-8.000000');
    assert.throws(() => varsToStr({ x: 0.5 }), /not an integer/);
  });

  test('reference file names replace characters outside [A-Za-z0-9_.=,-]', () => {
    assert.equal(sanitizeName('ABS(type=f32,ne_a=[5,7,11,13],v=1)'), 'ABS_type=f32,ne_a=_5,7,11,13_,v=1_');
  });

  test('perf output aligns to 8 columns with at least 5 spaces', () => {
    // "  " + 10 chars + ": " = 14 -> 16 leaves 2 < 5 -> 24
    assert.equal(perfAlign(10).length, 10);
    // 20 chars -> 24 -> 32 leaves 8
    assert.equal(perfAlign(20).length, 8);
  });
});

describe('error measures', () => {
  test('nmse is mse(a, b) / mse(a, 0)', () => {
    assert.equal(nmse(Float32Array.of(1, 2), Float32Array.of(1, 2)), 0);
    assert.ok(Math.abs(nmse(Float32Array.of(1, 1), Float32Array.of(0, 1)) - 0.5) < 1e-12);
    assert.ok(Number.isNaN(nmse(Float32Array.of(0), Float32Array.of(0)))); // 0/0 passes in ggml too
  });

  test('mean_abs_asymm filters on expected values', () => {
    assert.ok(Math.abs(meanAbsAsymm(Float32Array.of(1, 3), Float32Array.of(1, 1), []) - 0.25) < 1e-7);
    assert.equal(meanAbsAsymm(Float32Array.of(1, 3), Float32Array.of(1, 1), [1]), 0);
  });
});

describe("test mode's node comparison fails where ggml's callback fails", () => {
  test('equal results pass', () => {
    assert.deepEqual(compareNode(node('ADD', [1, 2, 3], [1, 2, 3]), 1e-7, 'GPU', 'CPU'), []);
  });
  test('a changed sentinel is reported', () => {
    assert.deepEqual(compareNode(node('NONE', [1, 2], [1, 2.5]), 1e-7, 'GPU', 'CPU'), ['sentinel mismatch: sent_3 ']);
  });
  test('NaN on either side fails', () => {
    assert.match(compareNode(node('ADD', [1, NaN], [1, 2]), 1, 'GPU', 'CPU')[0]!, /^\[ADD\] NaN at index 1 \(GPU=nan CPU=2.000000\)/);
  });
  test('infinities must match in sign; FLT_MAX counts as infinity', () => {
    assert.deepEqual(compareNode(node('EXP', [Infinity], [3.4028234663852886e38]), 1e-7, 'GPU', 'CPU'), []);
    assert.match(compareNode(node('EXP', [Infinity], [-Infinity]), 1, 'GPU', 'CPU')[0]!, /inf sign mismatch/);
    assert.match(compareNode(node('EXP', [Infinity], [1]), 1, 'GPU', 'CPU')[0]!, /inf mismatch: GPU=inf CPU=1.000000/);
  });
  test('NMSE above the bound fails with ggml\'s message', () => {
    assert.deepEqual(compareNode(node('MUL_MAT', [1, 1], [1, 1.001]), 1e-7, 'GPU', 'CPU'), [
      '[MUL_MAT] NMSE = 0.000000500 > 0.000000100 ',
    ]);
  });
});

describe("conformance mode's comparison with ggml's outputs", () => {
  test('same infinities are left out of the NMSE; NaN, other infinities and large errors fail', () => {
    assert.equal(compareWithReference(Float32Array.of(1, -Infinity, 2), Float32Array.of(1, -Infinity, 2), 0), '');
    assert.match(compareWithReference(Float32Array.of(1, Infinity), Float32Array.of(1, -Infinity), 1), /^inf mismatch at index 1/);
    assert.match(compareWithReference(Float32Array.of(NaN), Float32Array.of(1), 1), /^NaN at index 0/);
    assert.equal(compareWithReference(Float32Array.of(1, 1), Float32Array.of(1, 1.001), 1e-7), 'NMSE = 0.000000500 > 0.000000100');
    assert.equal(compareWithReference(Float32Array.of(3), Float32Array.of(3), 0), ''); // integer outputs: exact
  });
});

describe('tensor initialization', () => {
  test("init_tensor_uniform follows ggml's per-type rules", () => {
    const ctx = new Context({ memSize: 1 << 20, noAlloc: true });
    const cpu = Backend.init('CPU');
    const f = ctx.newTensor1d('f32', 64);
    const i32 = ctx.newTensor1d('i32', 64);
    const i64 = ctx.newTensor1d('i64', 8);
    const h = ctx.newTensor1d('f16', 64);
    const bh = ctx.newTensor2d('bf16', 16, 4);
    const buf = cpu.allocCtxTensors(ctx)!;
    try {
      initTensorUniform(f, new Rng(1, 'x'), 2, 3);
      const fv = f.toFloat32();
      assert.ok(fv.every((x) => x >= 2 && x < 3));
      // I32 gets the float buffer's bits, as ggml writes it
      initTensorUniform(i32, new Rng(1, 'x'), 2, 3);
      assert.deepEqual(new Float32Array(i32.get().slice().buffer), fv);
      // I64: the first half of the float bytes, twice
      initTensorUniform(i64, new Rng(1, 'x'), 2, 3);
      const b = i64.get();
      assert.deepEqual(b.subarray(0, 32), b.subarray(32, 64));
      assert.deepEqual(new Float32Array(b.slice(0, 32).buffer), fv.subarray(0, 8));
      // f16 goes through ggml's conversion
      initTensorUniform(h, new Rng(1, 'x'), 2, 3);
      assert.deepEqual(new Uint16Array(h.get().slice().buffer), Uint16Array.from(fv, f32ToF16));
      initTensorUniform(bh, new Rng(1, 'x'), 2, 3);
      assert.deepEqual(new Uint16Array(bh.get().slice().buffer), Uint16Array.from(fv, f32ToBf16));
    } finally {
      buf.dispose();
      ctx.dispose();
      cpu.dispose();
    }
  });

  test('f16 and bf16 conversions round to nearest even', () => {
    assert.equal(f32ToF16(1), 0x3c00);
    assert.equal(f32ToF16(65504), 0x7bff);
    assert.equal(f32ToF16(1e6), 0x7c00);
    assert.equal(f32ToF16(-2), 0xc000);
    assert.equal(f32ToF16(2 ** -24), 0x0001);
    assert.equal(f32ToF16(1 + 2 ** -11), 0x3c00); // tie -> even
    assert.equal(f32ToF16(1 + 3 * 2 ** -11), 0x3c02);
    assert.equal(f32ToBf16(1), 0x3f80);
    assert.equal(f32ToBf16(Math.fround(1 + 2 ** -8)), 0x3f80); // tie -> even
    assert.equal(f32ToBf16(Math.fround(1 + 3 * 2 ** -8)), 0x3f82);
  });

  test('the PRNG is reproducible per seed and stream', () => {
    const draw = (seed: number, s: string): number[] => {
      const r = new Rng(seed, s);
      return [r.nextU32(), r.nextU32(), r.rand()];
    };
    assert.deepEqual(draw(1, 'a'), draw(1, 'a'));
    assert.notDeepEqual(draw(1, 'a'), draw(1, 'b'));
    assert.notDeepEqual(draw(1, 'a'), draw(2, 'a'));
    const r = new Rng(7);
    for (let i = 0; i < 1000; i++) {
      const u = r.uniform(-1, 1);
      assert.ok(u >= -1 && u < 1);
    }
  });

  test('fillUniform draws the values uniform() would, and leaves the same state', () => {
    for (const [lo, hi] of [[-1, 1], [0.5, 3], [-1e-3, 7]] as const) {
      const [a, b] = [new Rng(3, 'f'), new Rng(3, 'f')];
      const bulk = new Float32Array(5000);
      b.fillUniform(bulk, lo, hi);
      const one = Float32Array.from({ length: bulk.length }, () => a.uniform(lo, hi));
      assert.deepEqual(bulk, one);
      assert.equal(a.nextU32(), b.nextU32());
    }
  });
});

describe('modes end to end', () => {
  test('test mode prints what ggml prints: devices, cases, "N/M tests passed", "N/M backends passed"', async () => {
    const lines: string[] = [];
    const ok = await run({ mode: 'test', op: 'SCALE', backend: 'CPU', params: null, minSeconds: 1, seed: 1, llm: false, opsMd: null, out: (l) => lines.push(l) });
    assert.equal(ok, true);
    const n = Backend.devices().length;
    assert.equal(lines[0], `Testing ${n} devices`);
    assert.equal(lines[2], 'Backend 1/' + n + ': CPU');
    assert.ok(lines.includes('  SCALE(type=f32,ne=[10,10,10,10],scale=2.000000): OK'), lines.join('\n'));
    assert.ok(lines.includes('  1/1 tests passed'));
    assert.ok(lines.includes('  Backend CPU: OK'));
    assert.equal(lines.at(-2), `${n}/${n} backends passed`);
    assert.equal(lines.at(-1), 'OK');
  });

  test("grad mode skips what ggml skips and needs autodiff for the rest", async () => {
    const cpu = Backend.init('CPU');
    try {
      const rng = new Rng(1);
      const adamw = await evalGrad(new TestOptStepAdamw(), cpu, rng);
      assert.equal(adamw.status, 'skipped');
      const f16 = await evalGrad(new TestCpy('f32', 'f16', [256, 4, 4, 4]), cpu, rng);
      assert.deepEqual([f16.status, f16.text], ['not supported', 'not supported [out->type != FP32]']);
      const noParams = await evalGrad(new TestArange(), cpu, rng);
      assert.deepEqual([noParams.status, noParams.text], ['not supported', 'not supported [(null)] \n']);
      const sqr = await evalGrad(new TestSqr(), cpu, rng);
      if (hasAutodiff()) assert.equal(sqr.status, 'ok', sqr.text);
      else assert.deepEqual([sqr.status, sqr.reason], ['not supported', 'autodiff not available']);
    } finally {
      cpu.dispose();
    }
  });

  test('grad mode checks every element by default, or evenly spaced ones from first to last', async () => {
    assert.deepEqual(fdIndices(5), [0, 1, 2, 3, 4]);
    assert.deepEqual(fdIndices(5, 5), [0, 1, 2, 3, 4]);
    assert.deepEqual(fdIndices(10, 4), [0, 3, 6, 9]);
    assert.deepEqual(fdIndices(1001, 3), [0, 500, 1000]);
    assert.deepEqual(fdIndices(7, 1), [0]);
    if (!hasAutodiff()) return;
    const cpu = Backend.init('CPU');
    try {
      const r = await evalGrad(new TestSqr(), cpu, new Rng(1), null, 8);
      assert.equal(r.status, 'ok', r.text);
    } finally {
      cpu.dispose();
    }
  });

  test('a case whose graph cannot be built is "not implemented", in every mode, not a crash', async () => {
    class TestMissing extends TestCase {
      readonly op = 'MISSING';
      vars(): Vars {
        return { n: 1 };
      }
      buildGraph(ctx: Context): Tensor {
        const a = this.newTensor1d(ctx, 'f32', 4);
        return (ctx as unknown as { fancyNewOp(a: Tensor): Tensor }).fancyNewOp(a);
      }
    }
    const cpu = Backend.init('CPU');
    try {
      const tc = new TestMissing();
      for (const r of [await evalTest(tc, cpu, cpu, new Rng(1)), await evalGrad(tc, cpu, new Rng(1))]) {
        assert.equal(r.status, 'not implemented');
        assert.match(r.text, /^not implemented: .*fancyNewOp is not a function/);
      }
      assert.equal(evalSupport(tc, [cpu]).support.CPU, 'not implemented');
    } finally {
      cpu.dispose();
    }
  });

  test('perf mode times a case and prints us/run and GB/s', async () => {
    const lines: string[] = [];
    await run({ mode: 'perf', op: 'ADD', backend: 'CPU', params: 'nr=[1,1,1,1]', minSeconds: 0.01, seed: 1, llm: false, opsMd: null, out: (l) => lines.push(l) });
    const line = lines.find((l) => l.startsWith('  ADD('));
    assert.match(line ?? '', /^ {2}ADD\(type=f32,ne=\[4096,1,1,1\],nr=\[1,1,1,1\]\): +\d+ runs - +[\d.]+ us\/run - +48 kB\/run - +[\d.]+ GB\/s$/);
  });
});
