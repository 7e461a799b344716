// The case lists against ggml itself: fixtures/ggml-cases.jsonl.gz is what ggml's own
// test-backend-ops.cpp built for every case at the reference commit (recorded once by running
// ggml's code outside this repository; no ggml code or build recipe is kept here), and
// /shared/ggml-reference
// holds ggml's outputs for 862 eval cases. Names, order, duplicates, hooks and every tensor of
// every graph must agree.

import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { sanitizeName } from './format.js';
import { makeTestCasesEval, makeTestCasesLlm, makeTestCasesPerf } from './lists.js';
import { TestExample } from './cases/example.js';
import { buildCase, NotImplemented } from './modes/result.js';
import { testContext } from './modes/test.js';
import { conformanceDir } from './modes/conformance.js';
import type { TestCase } from './test-case.js';

interface GgmlCase {
  set: 'eval' | 'perf' | 'extra';
  name: string;
  nmse: number;
  maa: number;
  eps: number;
  precise: number;
  nmax: number;
  expect: number[];
  size: number;
  flops: number;
  out: string;
  /** [name, type, op desc, ne, nb, flags, is view] in creation order. */
  tensors: [string, string, string, number[], number[], number, number][];
}

const fixture: GgmlCase[] = gunzipSync(readFileSync(resolve(__dirname, 'fixtures/ggml-cases.jsonl.gz')))
  .toString('utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as GgmlCase);
const ggml = (set: GgmlCase['set']): GgmlCase[] => fixture.filter((c) => c.set === set);

const evalCases = makeTestCasesEval();
const perfCases = makeTestCasesPerf();
const extraCases: TestCase[] = [...makeTestCasesLlm(), new TestExample()];

/**
 * Ops whose weft constructor creates its helper tensors in another order than ggml does (the
 * tensors themselves agree): compared as sets. weft's Tensor takes its sources at creation, so
 * OPT_STEP_ADAMW's m and v (ggml_dup_tensor of grad, srcs 2 and 3) are created before the
 * result; ggml creates the result first.
 */
const CREATION_ORDER_DIFFERS = new Set(['OPT_STEP_ADAMW']);

describe('case lists', () => {
  test("the eval list is ggml's: 1794 cases, same names, same order", () => {
    assert.equal(evalCases.length, 1794);
    assert.deepEqual(
      evalCases.map((c) => c.name),
      ggml('eval').map((c) => c.name),
    );
  });

  test('duplicate names are kept as in ggml (80 repeated OUT_PROD names)', () => {
    const seen = new Set<string>();
    const dups = evalCases.filter((c) => (seen.has(c.name) ? true : (seen.add(c.name), false)));
    assert.equal(dups.length, 80);
    assert.ok(dups.every((c) => c.op === 'OUT_PROD'));
    // the 32 the reference data leaves out: those of the CPU-supported combinations
    const cpuCombos = dups.filter((c) => /type_a=(f32|q4_0|q4_K|iq2_xxs),type_b=f32/.test(c.name));
    assert.equal(cpuCombos.length, 32);
    assert.equal(new Set(evalCases.map((c) => c.name)).size, 1794 - 80);
  });

  test("the perf list is ggml's: 46 cases", () => {
    assert.deepEqual(
      perfCases.map((c) => c.name),
      ggml('perf').map((c) => c.name),
    );
    assert.equal(perfCases.length, 46);
  });

  test('the disabled model blocks and the example case are named as in ggml', () => {
    assert.deepEqual(
      extraCases.map((c) => c.name),
      ggml('extra').map((c) => c.name),
    );
  });

  test('every case has ggml hooks: tolerances and gradient settings', () => {
    const all = [...evalCases, ...perfCases, ...extraCases];
    assert.equal(all.length, fixture.length);
    all.forEach((tc, i) => {
      const g = fixture[i]!;
      const got = {
        name: tc.name,
        nmse: tc.maxNmseErr(),
        maa: tc.maxMaaErr(),
        eps: tc.gradEps(),
        precise: Number(tc.gradPrecise()),
        nmax: tc.gradNmax(),
        expect: tc.gradExpect(),
      };
      const want = { name: g.name, nmse: g.nmse, maa: g.maa, eps: g.eps, precise: g.precise, nmax: g.nmax, expect: g.expect };
      assert.deepEqual(got, want);
    });
  });

  test("every graph weft can build has ggml's tensors (name, type, op, ne, nb, flags, view), op size and flops", (t) => {
    const all = [...evalCases, ...perfCases, ...extraCases];
    const notImplemented: string[] = [];
    let compared = 0;
    all.forEach((tc, i) => {
      const g = fixture[i]!;
      const ctx = testContext();
      try {
        const out = buildCase(tc, ctx, 'test');
        const tensors = ctx.tensors().map((x) => [x.name, x.type, x.opDesc, x.ne, x.nb, x.flags, Number(x.isView())]);
        if (CREATION_ORDER_DIFFERS.has(tc.op)) {
          const key = (l: unknown[]): string[] => l.map((x) => JSON.stringify(x)).sort();
          assert.deepEqual(key(tensors), key(g.tensors), tc.name);
        } else {
          assert.deepEqual(tensors, g.tensors, tc.name);
        }
        assert.equal(out.name, g.out, tc.name);
        assert.equal(tc.opSize(out), g.size, `${tc.name}: op_size`);
        assert.equal(tc.opFlops(out), g.flops, `${tc.name}: op_flops`);
        compared++;
      } catch (e) {
        if (!(e instanceof NotImplemented)) throw e;
        notImplemented.push(`${tc.name}: ${e.message}`);
      } finally {
        ctx.dispose();
      }
    });
    t.diagnostic(`${compared} graphs identical to ggml's; ${notImplemented.length} not buildable by weft yet`);
    for (const n of notImplemented.slice(0, 20)) t.diagnostic(`not implemented: ${n}`);
    assert.ok(compared > 0);
  });

  const ref = conformanceDir();
  test(
    'every case of ggml-reference/eval is in the eval list',
    { skip: existsSync(ref) ? false : `no reference data at ${ref} (set WEFT_GGML_REFERENCE)` },
    () => {
      const files = readdirSync(ref).filter((f) => f.endsWith('.gguf'));
      assert.equal(files.length, 862);
      const names = new Set(evalCases.map((c) => sanitizeName(c.name)));
      const missing = files.map((f) => f.slice(0, -'.gguf'.length)).filter((f) => !names.has(f));
      assert.deepEqual(missing, []);
    },
  );
});
