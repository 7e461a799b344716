// Fused attention: FLASH_ATTN_EXT.

import type { Context, GgmlType, Tensor } from 'weft-ml';
import { float, type Vars } from '../format.js';
import { blckSize, ggmlPad } from '../ggml-types.js';
import { named, TestCase } from '../test-case.js';

/** GGML_KQ_MASK_PAD: the mask's rows are padded to a multiple of this. */
export const KQ_MASK_PAD = 32;

// GGML_OP_FLASH_ATTN_EXT
export class TestFlashAttnExt extends TestCase {
  readonly op = 'FLASH_ATTN_EXT';
  constructor(
    readonly hs = 128, // head size
    readonly nh = 32, // num heads
    readonly kv = 96, // kv size
    readonly nb = 8, // batch size
    readonly mask = true, // use mask
    readonly maxBias = 0.0, // ALiBi
    readonly logitSoftcap = 0.0, // Gemma 2
    readonly typeKV: GgmlType = 'f16',
  ) {
    super();
  }

  vars(): Vars {
    const { hs, nh, kv, nb, mask } = this;
    return { hs, nh, kv, nb, mask, max_bias: float(this.maxBias), logit_softcap: float(this.logitSoftcap), type_KV: this.typeKV };
  }

  maxNmseErr(): number {
    return 5e-4;
  }

  buildGraph(ctx: Context): Tensor {
    const hsPadded = ggmlPad(this.hs, blckSize(this.typeKV));
    const q = named(this.newTensor4d(ctx, 'f32', hsPadded, this.nb, this.nh, 1), 'q');
    const k = named(this.newTensor4d(ctx, this.typeKV, hsPadded, this.kv, this.nh, 1), 'k');
    const v = named(this.newTensor4d(ctx, this.typeKV, hsPadded, this.kv, this.nh, 1), 'v');
    const m = this.mask ? named(this.newTensor4d(ctx, 'f16', this.kv, ggmlPad(this.nb, KQ_MASK_PAD), 1, 1), 'm') : null;
    const scale = Math.fround(1 / Math.fround(Math.sqrt(this.hs)));
    return named(ctx.flashAttnExt(q, k, v, m, scale, this.maxBias, this.logitSoftcap), 'out');
  }

  gradPrecise(): boolean {
    return true;
  }
}
