// Conformance mode's own tests: case names parse back into their cases (every case of the
// eval and perf lists), names outside the eval list build and run, reference files written
// here (outputs computed by plain loops in this file, not by weft) replay and pass, a
// corrupted output fails, and malformed or foreign files fail one by one without a crash.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { Backend, GgufWriter, type GgmlType } from '../../index.js';
import { TestMulMat } from './cases/matmul.js';
import { TestSoftMax } from './cases/softmax.js';
import { setColor } from './format.js';
import { makeTestCasesEval, makeTestCasesLlm, makeTestCasesPerf } from './lists.js';
import { TestExample } from './cases/example.js';
import { evalConformance, listReferenceFiles } from './modes/conformance.js';
import { CASE_REGISTRY, caseFromName, CaseNameError, parseName } from './parse-name.js';
import { Rng } from './rng.js';
import { quietGpuDrivers, run } from './runner.js';
import type { TestCase } from './test-case.js';

quietGpuDrivers();
setColor(false);

describe('case names parse back into cases', () => {
  const lists: [string, TestCase[]][] = [
    ['eval', makeTestCasesEval()],
    ['perf', makeTestCasesPerf()],
    ['disabled model blocks and the example', [...makeTestCasesLlm(), new TestExample()]],
  ];
  const used = new Set<string>();
  for (const [label, list] of lists) {
    test(`every ${label} case: the parsed name builds a case of the same struct, name, vars and hooks`, (t) => {
      for (const tc of list) {
        const p = caseFromName(tc.name);
        assert.equal(p.constructor, tc.constructor, tc.name);
        assert.equal(p.name, tc.name);
        assert.deepEqual(p.vars(), tc.vars(), tc.name);
        assert.deepEqual(
          [p.maxNmseErr(), p.maxMaaErr(), p.gradEps(), p.gradPrecise(), p.gradNmax(), p.gradExpect()],
          [tc.maxNmseErr(), tc.maxMaaErr(), tc.gradEps(), tc.gradPrecise(), tc.gradNmax(), tc.gradExpect()],
          tc.name,
        );
        used.add(`${p.op}:${p.constructor.name}`);
      }
      t.diagnostic(`${list.length} ${label} names round-trip (${new Set(list.map((c) => c.name)).size} distinct)`);
    });
  }

  test('every registry entry is used by some case of the lists', () => {
    const ops = new Set([...used].map((u) => u.split(':')[0]!));
    for (const e of CASE_REGISTRY) for (const op of e.ops) assert.ok(ops.has(op), `no listed case prints ${op}`);
    // the two structs printing UPSCALE and the two printing ADD were both reached
    assert.equal([...used].filter((u) => u.startsWith('UPSCALE:')).length, 2);
    assert.equal([...used].filter((u) => u.startsWith('ADD:')).length, 2);
  });

  test('the grammar: scalars, lists, nested lists', () => {
    assert.deepEqual(parseName('X(a=1,b=[1,[2,3]],c=avg,d=-0.500000)'), {
      op: 'X',
      vars: [['a', '1'], ['b', ['1', ['2', '3']]], ['c', 'avg'], ['d', '-0.500000']],
    });
    assert.deepEqual(parseName('LLAMA()'), { op: 'LLAMA', vars: [] });
  });

  test('names that do not describe a case say why', () => {
    const bad: [string, RegExp][] = [
      ['MUL_MAT', /is not OP\(k=v,\.\.\.\)/],
      ['FOO(x=1)', /no case struct prints OP FOO/],
      ['MUL_MAT(type_a=f32)', /MUL_MAT takes \(type_a,type_b,m,n,k,bs,nr,per\), the name has \(type_a\)/],
      ['UPSCALE(type=f32,ne=[1,2,3,4])', /takes \(type,ne,scale_factor,transpose\) or \(type,ne,ne_tgt\)/],
      ['SOFT_MAX(type=f32,ne=[16,16,1],mask=0,scale=1.000000,max_bias=0.000000)', /ne=\[16,16,1\] must be a list of 4 integers/],
      ['SCALE(type=f32,ne=[10,10,10,10],scale=2)', /scale=2: expected a float printed as %f/],
      ['SCALE(type=f32,ne=[10,10,10,10],scale=0.1)', /not as ggml prints it; the case prints SCALE\(.*scale=0\.100000\)/],
      ['ADD(type=f33,ne=[1,1,1,1],nr=[1,1,1,1])', /unknown ggml type 'f33'/],
      ['SOFT_MAX(type=f32,ne=[1,1,1,1],mask=2,scale=1.000000,max_bias=0.000000)', /mask=2: expected a bool/],
      ['MUL_MAT_ID(type_a=f32,type_b=f32,n_mats=2,n_used=4,b=0,m=1,n=1,k=1)', /n_used <= n_mats/],
      ['ARGSORT(type=f32,ne=[1,1,1,1],order=asc)', /expected a sort order/],
      ['ADD(type=f32,ne=[1,1,1,1],nr=[1,1,1,1],)', /trailing comma/],
      ['ADD(type=f32,type=f32)', /parameter 'type' repeated/],
    ];
    for (const [name, re] of bad) assert.throws(() => caseFromName(name), (e: Error) => e instanceof CaseNameError && re.test(e.message), name);
  });

  test('names outside the eval list build the case with those parameters', () => {
    const mm = caseFromName('MUL_MAT(type_a=f16,type_b=f32,m=7,n=3,k=5,bs=[2,1],nr=[1,1],per=[0,1,2,3])');
    assert.ok(mm instanceof TestMulMat);
    assert.deepEqual([mm.typeA, mm.m, mm.n, mm.k, mm.bs], ['f16', 7, 3, 5, [2, 1]]);
    const sm = caseFromName('SOFT_MAX(type=f32,ne=[6,4,2,1],mask=1,scale=0.250000,max_bias=0.000000)');
    assert.ok(sm instanceof TestSoftMax);
    assert.deepEqual([sm.scale, sm.mask, sm.ne], [0.25, true, [6, 4, 2, 1]]);
    assert.equal(caseFromName('DUP(type=f32,ne=[3,4,5,1])').name, 'DUP(type=f32,ne=[3,4,5,1])');
  });
});

// ---- reference files written here, outputs by plain loops ----

interface Ref {
  name: string;
  maxErr: number;
  graphOps: string[];
  inputs: { name: string; type: GgmlType; ne: number[]; data: Float32Array | Int32Array | Uint8Array }[];
  output: { type: GgmlType; ne: number[]; data: Float32Array | Int32Array | Uint8Array };
}

function uniform(n: number, rng: Rng): Float32Array {
  return Float32Array.from({ length: n }, () => rng.uniform(-1, 1));
}

/** MUL_MAT(m=7,n=3,k=5,bs=[2,1]): out[i,j,b] = sum_l a[l,i,b] * b[l,j,b]. */
function mulMatRef(rng: Rng): Ref {
  const [m, n, k, bs] = [7, 3, 5, 2];
  const a = uniform(k * m * bs, rng);
  const b = uniform(k * n * bs, rng);
  const out = new Float32Array(m * n * bs);
  for (let q = 0; q < bs; q++) {
    for (let j = 0; j < n; j++) {
      for (let i = 0; i < m; i++) {
        let s = 0;
        for (let l = 0; l < k; l++) s += a[q * k * m + i * k + l]! * b[q * k * n + j * k + l]!;
        out[q * m * n + j * m + i] = s;
      }
    }
  }
  return {
    name: `MUL_MAT(type_a=f32,type_b=f32,m=${m},n=${n},k=${k},bs=[${bs},1],nr=[1,1],per=[0,1,2,3])`,
    maxErr: 5e-4,
    graphOps: ['MUL_MAT'],
    inputs: [
      { name: 'a', type: 'f32', ne: [k, m, bs, 1], data: a },
      { name: 'b', type: 'f32', ne: [k, n, bs, 1], data: b },
    ],
    output: { type: 'f32', ne: [m, n, bs, 1], data: out },
  };
}

/** SOFT_MAX(ne=[6,4,2,1],mask=1,scale=0.25): each row softmax(scale * a + mask row). */
function softMaxRef(rng: Rng): Ref {
  const [n0, n1, n2, scale] = [6, 4, 2, 0.25];
  const a = uniform(n0 * n1 * n2, rng);
  const mask = uniform(n0 * n1, rng);
  const out = new Float32Array(a.length);
  for (let r = 0; r < n1 * n2; r++) {
    const x = Array.from({ length: n0 }, (_, i) => scale * a[r * n0 + i]! + mask[(r % n1) * n0 + i]!);
    const max = Math.max(...x);
    const e = x.map((v) => Math.exp(v - max));
    const sum = e.reduce((s, v) => s + v, 0);
    e.forEach((v, i) => (out[r * n0 + i] = v / sum));
  }
  return {
    name: `SOFT_MAX(type=f32,ne=[${n0},${n1},${n2},1],mask=1,scale=0.250000,max_bias=0.000000)`,
    maxErr: 1e-6,
    graphOps: ['SOFT_MAX'],
    inputs: [
      { name: 'a', type: 'f32', ne: [n0, n1, n2, 1], data: a },
      { name: 'mask', type: 'f32', ne: [n0, n1, 1, 1], data: mask },
    ],
    output: { type: 'f32', ne: [n0, n1, n2, 1], data: out },
  };
}

/** ARGSORT(ne=[5,3,1,1],order=1): indices of each row by descending value (an integer output). */
function argsortRef(rng: Rng): Ref {
  const [n0, n1] = [5, 3];
  const a = uniform(n0 * n1, rng);
  const out = new Int32Array(a.length);
  for (let r = 0; r < n1; r++) {
    const idx = Array.from({ length: n0 }, (_, i) => i).sort((x, y) => a[r * n0 + y]! - a[r * n0 + x]!);
    out.set(idx, r * n0);
  }
  return {
    name: `ARGSORT(type=f32,ne=[${n0},${n1},1,1],order=1)`,
    maxErr: 1e-7,
    graphOps: ['ARGSORT'],
    inputs: [{ name: 'a', type: 'f32', ne: [n0, n1, 1, 1], data: a }],
    output: { type: 'i32', ne: [n0, n1, 1, 1], data: out },
  };
}

const bytes = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** A reference file as shared/ggml-reference/README.md describes it. */
function writeRef(path: string, r: Ref, edit: (w: GgufWriter) => void = () => {}): void {
  const w = new GgufWriter();
  w.set('case.name', r.name);
  w.set('case.op', /^[A-Z0-9_]+/.exec(r.name)![0]);
  w.set('case.max_nmse_err', r.maxErr, 'f64');
  w.set('case.set', 'extra');
  w.set('case.input_names', r.inputs.map((i) => i.name), 'arr', 'str');
  w.set('case.graph_ops', r.graphOps, 'arr', 'str');
  r.inputs.forEach((x, k) => w.addTensorData(`input.${k}`, x.type, x.ne, bytes(x.data)));
  edit(w);
  w.addTensorData('output', r.output.type, r.output.ne, bytes(r.output.data));
  w.writeFile(path);
}

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'weft-conformance-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function conformance(dir: string): Promise<string[]> {
  const lines: string[] = [];
  const opts = { mode: 'conformance' as const, op: null, backend: 'CPU', params: null, minSeconds: 1, seed: 1, llm: false, opsMd: null };
  await run({ ...opts, dir, out: (l) => lines.push(l) });
  return lines;
}

describe('conformance mode on files written here', () => {
  const refs = [mulMatRef(new Rng(1, 'mm')), softMaxRef(new Rng(1, 'sm')), argsortRef(new Rng(1, 'as'))];

  test('cases outside the eval list replay and pass; the run closes with the counts', async () => {
    const eval_ = new Set(makeTestCasesEval().map((c) => c.name));
    const dir = tempDir();
    for (const [i, r] of refs.entries()) {
      assert.ok(!eval_.has(r.name), `${r.name} is in the eval list`);
      writeRef(join(dir, `case${i}.gguf`), r);
    }
    const lines = await conformance(dir);
    const text = lines.join('\n');
    for (const r of refs) assert.ok(lines.includes(`  ${r.name}: OK`), text);
    assert.ok(lines.includes('  CPU: 3 passed, 0 failed, 0 skipped'), text);
    assert.match(text, /^ {2}MUL_MAT +1 +0 +0$/m);
    assert.equal(lines.at(-1), '3 passed, 0 failed, 0 skipped');
  });

  test('a corrupted output fails: NMSE for floats, exact values for integers', async () => {
    const dir = tempDir();
    const [mm, sm, as] = refs.map((r) => ({ ...r, output: { ...r.output, data: r.output.data.slice() } }));
    mm!.output.data[4] = mm!.output.data[4]! + 0.5;
    sm!.output.data[0] = NaN;
    const d = as!.output.data;
    [d[0], d[1]] = [d[1]!, d[0]!];
    for (const [i, r] of [mm!, sm!, as!].entries()) writeRef(join(dir, `bad${i}.gguf`), r);
    const lines = await conformance(dir);
    const text = lines.join('\n');
    assert.match(text, /^ {2}MUL_MAT\(.*\): \[MUL_MAT\] NMSE = \d\.\d{9} > 0\.000500000 FAIL$/m);
    assert.match(text, /^ {2}SOFT_MAX\(.*\): \[SOFT_MAX\] NaN at index 0 \(weft=[\d.]+ ggml=nan\) FAIL$/m);
    assert.match(text, /^ {2}ARGSORT\(.*\): \[ARGSORT\] 2 of 15 values differ, first at index 0 \(weft=\d ggml=\d\) FAIL$/m);
    assert.equal(lines.at(-1), '0 passed, 3 failed, 0 skipped');
    assert.ok(lines.includes('FAIL'));
  });

  test('malformed and foreign files fail one by one with the reason, never a crash', async () => {
    const dir = tempDir();
    const [mm] = refs;
    writeFileSync(join(dir, 'notes.txt'), 'not a gguf file\n');
    writeFileSync(join(dir, 'README.md'), 'ignored\n');
    const noName = new GgufWriter();
    noName.set('case.max_nmse_err', 1e-7, 'f64');
    noName.writeFile(join(dir, 'no-name.gguf'));
    writeRef(join(dir, 'bad-shape.gguf'), { ...mm!, inputs: [mm!.inputs[0]!, { ...mm!.inputs[1]!, ne: [5, 6, 1, 1], data: new Float32Array(30) }] });
    writeRef(join(dir, 'bad-type.gguf'), { ...mm!, inputs: [mm!.inputs[0]!, { ...mm!.inputs[1]!, type: 'i32', data: new Int32Array(30) }] });
    writeRef(join(dir, 'few-inputs.gguf'), { ...mm!, inputs: [mm!.inputs[0]!] });
    writeRef(join(dir, 'unknown-op.gguf'), { ...mm!, name: 'FOO(x=1)' });
    const w = new GgufWriter();
    w.set('case.name', mm!.name);
    w.set('case.max_nmse_err', 5e-4, 'f64');
    w.set('case.input_names', ['a', 'b'], 'arr', 'str');
    w.writeFile(join(dir, 'no-output.gguf'));

    const files = listReferenceFiles(dir);
    assert.deepEqual(
      files.map((f) => f.file),
      ['bad-shape.gguf', 'bad-type.gguf', 'few-inputs.gguf', 'no-name.gguf', 'no-output.gguf', 'notes.txt', 'unknown-op.gguf'],
    );
    const lines = await conformance(dir);
    const text = lines.join('\n');
    const expect: [string, RegExp][] = [
      ['notes.txt', /error: not a GGUF file \(.+\) FAIL/],
      ['no-name.gguf', /error: missing key case\.name FAIL/],
      [mm!.name, /error: the file does not fit the case: input\.1 \(the case's 'b'\): shape \[5,6,1,1\], the case's is \[5,3,2,1\] FAIL/],
      [mm!.name, /error: the file does not fit the case: input\.1 \(the case's 'b'\): type i32, the case's is f32 FAIL/],
      [mm!.name, /error: the file does not fit the case: the case has 2 inputs \('a', 'b'\), the file has 1 \('input\.0'\) FAIL/],
      [mm!.name, /error: no tensor output FAIL/],
      ['FOO(x=1)', /error: FOO\(x=1\): no case struct prints OP FOO FAIL/],
    ];
    for (const [label, re] of expect) {
      assert.ok(
        lines.some((l) => l.startsWith(`  ${label}: `) && re.test(l)),
        `no line for ${label} matching ${re}\n${text}`,
      );
    }
    assert.match(text, /^ {2}\(unknown\) +0 +2 +0$/m);
    assert.equal(lines.at(-1), '0 passed, 7 failed, 0 skipped');
  });

  test('a case the backend cannot run is not supported, with the reason', async () => {
    // CPY to q4_0_4x4: weft does not quantize the repacked aarch64 layouts
    const cpu = Backend.init('CPU');
    const dir = tempDir();
    const name = 'CPY(type_src=f32,type_dst=q4_0_4x4,ne=[256,1,1,1],permute=[0,0,0,0])';
    const blocks = new Uint8Array(8 * 18); // eight q4_0_4x4 blocks
    writeRef(join(dir, 'cpy.gguf'), {
      name,
      maxErr: 1e-6,
      graphOps: ['CPY'],
      inputs: [
        { name: 'src', type: 'f32', ne: [256, 1, 1, 1], data: new Float32Array(256) },
        { name: 'dst', type: 'q4_0_4x4', ne: [256, 1, 1, 1], data: blocks },
      ],
      output: { type: 'q4_0_4x4', ne: [256, 1, 1, 1], data: blocks },
    });
    try {
      const [f] = listReferenceFiles(dir);
      const r = await evalConformance(f!, cpu, cpu);
      assert.equal(r.status, 'not supported', r.text);
      assert.match(r.text, /^not supported \[CPU\] \(CPU does not support CPY/);
    } finally {
      cpu.dispose();
    }
  });
});
