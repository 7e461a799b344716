// Reference mode (weft's addition): replay the cases of shared/ggml-reference, each a GGUF file
// with the inputs ggml's test initializer made and the output ggml's CPU backend computed from
// them, and compare a backend's output with ggml's (README of ggml-reference: NaN fails, an
// infinity must be matched by the same infinity, NMSE over the other positions within the
// case's bound).

import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Backend, Context, Gguf, type Tensor } from '../../../index.js';
import { fixed, sanitizeName } from '../format.js';
import { isinfOrMax, signbit } from '../tensor-data.js';
import type { TestCase } from '../test-case.js';
import { buildCase, failText, okText, runCase, type CaseResult } from './result.js';
import { describeUnsupported, firstUnsupported } from './test.js';

/** The ggml-reference folder: $WEFT_GGML_REFERENCE, else shared/ggml-reference beside the repo. */
export function referenceDir(): string {
  return process.env.WEFT_GGML_REFERENCE ?? resolve(__dirname, '../../../../shared/ggml-reference');
}

/** The reference file of a case, or null when ggml-reference has none for it. */
export function referenceFile(tc: TestCase, dir = referenceDir()): string | null {
  const f = resolve(dir, 'eval', `${sanitizeName(tc.name)}.gguf`);
  return existsSync(f) ? f : null;
}

/** A GGUF tensor's values as f32, through a CPU tensor of its type. */
function ggufToFloat(g: Gguf, name: string, cpu: Backend): Float32Array {
  const info = g.tensorInfos().find((i) => i.name === name);
  if (!info) throw new Error(`no tensor '${name}' in the reference file`);
  const ctx = new Context({ memSize: Context.tensorOverhead() * 2, noAlloc: true });
  const t = ctx.newTensor(info.type, info.ne);
  const buf = cpu.allocCtxTensors(ctx)!;
  try {
    t.set(g.tensorData(name));
    return t.toFloat32();
  } finally {
    buf.dispose();
    ctx.dispose();
  }
}

/** The README's comparison; returns the failure message, or '' when the output matches. */
export function compareWithReference(got: Float32Array, want: Float32Array, maxErr: number): string {
  if (got.length !== want.length) return `${got.length} values, ggml has ${want.length}`;
  let num = 0;
  let den = 0;
  for (let i = 0; i < got.length; i++) {
    const x = got[i]!;
    const r = want[i]!;
    if (Number.isNaN(x) || Number.isNaN(r)) return `NaN at index ${i} (weft=${fixed(x)} ggml=${fixed(r)})`;
    if (isinfOrMax(x) || isinfOrMax(r)) {
      if (isinfOrMax(x) && isinfOrMax(r) && signbit(x) === signbit(r)) continue;
      return `inf mismatch at index ${i} (weft=${fixed(x)} ggml=${fixed(r)})`;
    }
    const d = x - r;
    num += d * d;
    den += x * x;
  }
  const err = den === 0 ? (num === 0 ? 0 : Infinity) : num / den;
  return err > maxErr ? `NMSE = ${fixed(err, 9)} > ${fixed(maxErr, 9)}` : '';
}

/** Replay one case from its reference file on `backend`. */
export async function evalReference(tc: TestCase, backend: Backend, cpu: Backend, file: string): Promise<CaseResult> {
  return runCase(tc, async (run) => {
    const g = run.hold(Gguf.open(file));
    const ctx = run.hold(new Context({ memSize: Context.tensorOverhead() * 128 + Context.graphOverhead(), noAlloc: true }));
    if (g.get('case.name') !== tc.name) throw new Error(`${file} holds case ${String(g.get('case.name'))}`);
    const out = buildCase(tc, ctx, 'ref'); // no sentinels: the file's inputs are the case's own tensors
    const unsupported = firstUnsupported(backend, ctx);
    if (unsupported) {
      return run.result('not supported', `not supported [${backend.name}] `, describeUnsupported(backend, unsupported));
    }
    run.hold(backend.allocCtxTensors(ctx));

    // the k-th tensor that is real leaf storage gets input.k
    const leaves: Tensor[] = ctx.tensors().filter((t) => t.op === 'NONE' && !t.isView());
    const infos = g.tensorInfos().filter((i) => i.name.startsWith('input.'));
    if (infos.length !== leaves.length) throw new Error(`${leaves.length} inputs, the file has ${infos.length}`);
    leaves.forEach((t, k) => {
      const info = infos.find((i) => i.name === `input.${k}`)!;
      if (info.type !== t.type || info.ne.join() !== t.ne.join()) {
        throw new Error(`input.${k} is ${info.type}[${info.ne}], the case's '${t.name}' is ${t.type}[${t.ne}]`);
      }
      t.set(g.tensorData(info.name));
    });

    const gf = ctx.newGraph();
    gf.buildForwardExpand(out);
    await backend.compute(gf);

    const maxErr = Number(g.get('case.max_nmse_err'));
    const msg = compareWithReference(out.toFloat32(), ggufToFloat(g, 'output', cpu), maxErr);
    if (msg) return run.result('fail', `[${tc.opDesc(out)}] ${msg} ${failText()}`, msg);
    return run.result('ok', okText(), '');
  });
}
