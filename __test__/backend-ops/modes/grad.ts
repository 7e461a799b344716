// Grad mode (test_case::eval_grad): gradients from the backward graph against finite
// differences of the forward graph, with the case's eps / precise / expect rules and
// mean-abs-asymmetry against max_maa_err. Needs weft's autodiff (see capabilities.ts).

import { Context, type Backend, type Tensor } from 'weft-ml';
import { autodiff } from '../capabilities.js';
import { fixed } from '../format.js';
import type { Rng } from '../rng.js';
import { meanAbsAsymm, setF32, tensorToFloat } from '../tensor-data.js';
import type { TestCase } from '../test-case.js';
import { buildCase, failText, okText, runCase, type CaseResult } from './result.js';
import { describeUnsupported } from './test.js';

/** GGML_DEFAULT_GRAPH_SIZE. */
const DEFAULT_GRAPH_SIZE = 2048;

/** A scalar f32 tensor's value. */
function scalar(t: Tensor): number {
  return new Float32Array(t.get(0, 4).slice().buffer)[0]!;
}

/**
 * The checks before any backward pass, in ggml's order: each returns the text ggml prints when
 * the case is not supported, or null. `opName` is the -o filter (ggml prints it, "(null)" when
 * there is none).
 */
function preChecks(ctx: Context, out: Tensor, backend: Backend, opName: string | null): [string, string] | null {
  if (out.type !== 'f32') return [`not supported [${out.name}->type != FP32]`, `${out.name} is ${out.type}`];
  let text = '';
  let reason = '';
  let supported = true;
  let anyParams = false;
  for (const t of ctx.tensors()) {
    if (!backend.supportsOp(t)) {
      text += `not supported [${backend.name}] `;
      reason = describeUnsupported(backend, t);
      supported = false;
      break;
    }
    if (t.flags & 4) {
      anyParams = true;
      if (t.type !== 'f32') {
        text += `not supported [${t.name}->type != FP32] `;
        reason = `parameter ${t.name} is ${t.type}`;
        supported = false;
        break;
      }
    }
  }
  if (!anyParams) {
    text += `not supported [${opName ?? '(null)'}] \n`;
    reason ||= 'the case has no parameters (no gradient to check)';
    supported = false;
  }
  return supported ? null : [text, reason];
}

/**
 * The elements of an `ne`-element parameter whose gradient is checked by finite differences:
 * all of them (ggml) or, with a limit, `limit` evenly spaced ones from the first to the last.
 */
export function fdIndices(ne: number, limit = Infinity): number[] {
  if (ne <= limit) return Array.from({ length: ne }, (_, i) => i);
  if (limit <= 1) return [0];
  return Array.from({ length: limit }, (_, j) => Math.round((j * (ne - 1)) / (limit - 1)));
}

/**
 * test_case::eval_grad. `fdSamples` limits the elements of each parameter checked by finite
 * differences (each costs 2 or 4 forward computes); ggml checks all, which is the default.
 */
export async function evalGrad(
  tc: TestCase,
  backend: Backend,
  rng: Rng,
  opName: string | null = null,
  fdSamples = Infinity,
): Promise<CaseResult> {
  const expect = tc.gradExpect();
  return runCase(tc, async (run) => {
    const ctx = run.hold(
      new Context({
        memSize: Context.tensorOverhead() * 128 + 2 * Context.graphOverhead(DEFAULT_GRAPH_SIZE, true),
        noAlloc: true,
      }),
    );
    const gf = ctx.newGraphCustom(DEFAULT_GRAPH_SIZE, true);
    const gb = ctx.newGraphCustom(DEFAULT_GRAPH_SIZE, true);
    let out = buildCase(tc, ctx, 'grad');

    if (out.op === 'OPT_STEP_ADAMW') {
      return run.result('skipped', '', 'ggml does not check gradients of OPT_STEP_ADAMW');
    }

    const pre = preChecks(ctx, out, backend, opName);
    if (pre) return run.result('not supported', pre[0], pre[1]);

    let ngrads = 0;
    for (const t of ctx.tensors()) if (t.flags & 4) ngrads += t.nelements;
    if (ngrads > tc.gradNmax()) {
      return run.result('skipped', 'skipping large tensors for speed ', `${ngrads} gradients > grad_nmax ${tc.gradNmax()}`);
    }

    // Everything from here on needs weft's autodiff.
    const ad = autodiff(ctx, gb);

    if (!out.isScalar()) {
      out = ctx.sum(out);
      out.name = 'sum_of_out';
    }
    out.setLoss();

    gf.buildForwardExpand(out);
    gf.cpy(gb);
    ad.buildBackwardExpand(gf, gb, false);
    if (expect.length !== 1 || expect[0] !== 0) {
      if (gb.nNodes <= gf.nNodes) {
        return run.result('fail', `backward graph adds no nodes ${failText()}`, 'backward graph adds no nodes');
      }
      for (const t of ctx.tensors()) {
        if (t.flags & 4 && (!t.grad || t.grad.op === 'NONE')) {
          return run.result('fail', `no gradient op for ${t.name} ${failText()}`, `parameter ${t.name} has no gradient op`);
        }
      }
    }

    // ggml checks support again, now that the backward nodes exist
    for (const t of ctx.tensors()) {
      if (!backend.supportsOp(t)) {
        return run.result('not supported', `not supported [${backend.name}] `, describeUnsupported(backend, t));
      }
      if (t.flags & 4 && t.type !== 'f32') {
        return run.result('not supported', `not supported [${t.name}->type != FP32] `, `parameter ${t.name} is ${t.type}`);
      }
    }

    const buf = run.hold(backend.allocCtxTensors(ctx));
    if (!buf) return run.result('fail', `failed to allocate tensors [${backend.name}] ${failText()}`, 'allocation failed');

    tc.initializeTensors(ctx, rng); // Randomizes all tensors (including gradients).
    ad.reset(); // Sets gradients to 1 if loss, 0 otherwise.

    await backend.compute(gf);
    await backend.compute(gb);

    const bn = backend.name;
    let msg = '';
    for (const t of ctx.tensors()) {
      if (!(t.flags & 4)) continue;
      const ne = t.nelements;
      const ga = tensorToFloat(t.grad!);
      const bad = ga.findIndex((g) => !Number.isFinite(g));
      if (bad >= 0) {
        msg = `[${t.opDesc}] nonfinite gradient at index ${bad} (${bn}=${fixed(ga[bad]!)}) `;
        break;
      }

      const idx = fdIndices(ne, fdSamples);
      const gn = new Float32Array(idx.length); // gradient numeric
      const x0 = tensorToFloat(t); // original t data
      const eps = tc.gradEps();
      const at = async (x: number, i: number): Promise<number> => {
        setF32(t, [x], i * 4);
        await backend.compute(gf);
        return scalar(out);
      };
      for (const [k, i] of idx.entries()) {
        const xi = x0[i]!;
        const fu = await at(Math.fround(xi + eps), i);
        const fd = await at(Math.fround(xi - eps), i);
        if (tc.gradPrecise()) {
          const fuh = await at(Math.fround(xi + Math.fround(0.5 * eps)), i);
          const fdh = await at(Math.fround(xi - Math.fround(0.5 * eps)), i);
          gn[k] = (8.0 * fuh + fd - (8.0 * fdh + fu)) / (6.0 * eps);
        } else {
          gn[k] = Math.fround(Math.fround(fu - fd) / Math.fround(2 * eps));
        }
        setF32(t, x0);
      }

      const err = meanAbsAsymm(gn, Float32Array.from(idx, (i) => ga[i]!), expect);
      if (err > tc.maxMaaErr()) {
        msg = `[${t.opDesc}] MAA = ${fixed(err, 9)} > ${fixed(tc.maxMaaErr(), 9)} `;
        break;
      }
    }
    if (msg) return run.result('fail', `${msg}compare failed ${failText()}`, msg.trim());
    return run.result('ok', okText(), '');
  });
}
