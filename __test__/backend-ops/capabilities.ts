// The one place that asks whether the binding has the parts of ggml's API this suite needs
// beyond what every build has: quantization (ggml_quantize_chunk) and autodiff
// (ggml_build_backward_expand, ggml_graph_reset). A case that needs a missing part is
// reported "not supported: <what> missing / not available", never silently dropped, and
// lights up by itself the day the binding grows the method.

import * as weft from 'weft-ml';
import type { Context, GgmlType, Graph } from 'weft-ml';

/** A case this run cannot check; printed as "not supported: <reason>". */
export class NotSupported extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'NotSupported';
  }
}

/** ggml_quantize_chunk(type, src, dst, start, nrows, n_per_row, imatrix) as the binding spells it. */
export type QuantizeChunk = (
  type: GgmlType,
  src: Float32Array,
  start: number,
  nrows: number,
  nPerRow: number,
  imatrix?: Float32Array | null,
) => Uint8Array;

const mod = weft as unknown as Record<string, unknown>;

/** The binding's quantizer, or a NotSupported error naming what is missing. */
export function quantizer(): QuantizeChunk {
  const q = mod.quantizeChunk;
  if (typeof q !== 'function') throw new NotSupported(QUANT_MISSING);
  return q as QuantizeChunk;
}

export const QUANT_MISSING = 'quantization API missing';
export const AUTODIFF_MISSING = 'autodiff not available';

interface AutodiffContext {
  buildBackwardExpand(gf: Graph, gb: Graph, accumulate: boolean): void;
}
interface AutodiffGraph {
  reset(): void;
}

/** ggml_build_backward_expand and ggml_graph_reset, or NotSupported('autodiff not available'). */
export function autodiff(ctx: Context, gb: Graph): { buildBackwardExpand: AutodiffContext['buildBackwardExpand']; reset: () => void } {
  const c = ctx as unknown as Partial<AutodiffContext>;
  const g = gb as unknown as Partial<AutodiffGraph>;
  if (typeof c.buildBackwardExpand !== 'function' || typeof g.reset !== 'function') {
    throw new NotSupported(AUTODIFF_MISSING);
  }
  return {
    buildBackwardExpand: (gf, gbb, acc) => c.buildBackwardExpand!.call(ctx, gf, gbb, acc),
    reset: () => g.reset!.call(gb),
  };
}

/** Whether the build has autodiff at all (for summaries). */
export function hasAutodiff(): boolean {
  const proto = (weft.Context as unknown as { prototype: Record<string, unknown> }).prototype;
  const gproto = (weft.Graph as unknown as { prototype: Record<string, unknown> }).prototype;
  return typeof proto.buildBackwardExpand === 'function' && typeof gproto.reset === 'function';
}
