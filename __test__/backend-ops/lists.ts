// Section 3 of test-backend-ops: which cases run. makeTestCasesEval() is ggml's eval list
// (same cases, same order, same names, duplicate names included) and makeTestCasesPerf() its
// perf list, built by the same loops.

import type { GgmlType, PoolOp, SortOrder } from 'weft-ml';
import { TestFlashAttnExt } from './cases/attention.js';
import { TestAdd1, TestBinBcast, TestScale, type BinOp } from './cases/binary.js';
import { TestConvTranspose1d, TestIm2col, TestPool2d, TestUpscale, TestUpscaleExt } from './cases/conv.js';
import { TestAcc, TestCont, TestCpy, TestDup, TestSet } from './cases/copy.js';
import { TestArange, TestTimestepEmbedding } from './cases/generate.js';
import { TestConcat, TestPad, TestRepeat } from './cases/layout.js';
import { TestFalcon, TestLlama } from './cases/llm.js';
import { TestMulMat, TestMulMatId, TestOutProd } from './cases/matmul.js';
import { TestGroupNorm, TestNorm, TestRmsNorm } from './cases/norm.js';
import { TestSum, TestSumRows } from './cases/reduce.js';
import { TestRope } from './cases/rope.js';
import { TestArgmax, TestArgsort, TestCountEqual, TestGetRows } from './cases/rows.js';
import { TestDiagMaskInf, TestSoftMax } from './cases/softmax.js';
import { TestRwkvWkv, TestSsmConv, TestSsmScan } from './cases/ssm.js';
import { TestCrossEntropyLoss, TestOptStepAdamw } from './cases/training.js';
import { TestClamp, TestCos, TestLeakyRelu, TestLog, TestSin, TestSqr, TestSqrt, TestUnary, UNARY_OPS } from './cases/unary.js';
import { ALL_TYPES, BASE_TYPES, blckSize, OTHER_TYPES } from './ggml-types.js';
import type { Ne4 } from './test-case.js';
import type { TestCase } from './test-case.js';

/** Test cases for evaluation: cover edge cases with small inputs to keep the runtime low. */
export function makeTestCasesEval(): TestCase[] {
  const tc: TestCase[] = [];

  // unary ops
  for (const v of [0, 1]) {
    for (const op of UNARY_OPS) {
      tc.push(new TestUnary(op, 'f32', [128, 2, 2, 2], v));
      tc.push(new TestUnary(op, 'f32', [5, 7, 11, 13], v));
    }
  }

  tc.push(new TestGetRows('f32', 1, 8, 2, 1, false));
  for (const type of ALL_TYPES) {
    for (const b of [1, 7]) {
      for (const v of [false, true]) tc.push(new TestGetRows(type, 256, 5, 4, b, v));
    }
  }
  for (const b of [1, 7]) {
    for (const v of [false, true]) tc.push(new TestGetRows('i32', 256, 5, 4, b, v));
  }

  for (const typeInput of ['f32'] as const) {
    for (const poolType of ['avg', 'max'] as PoolOp[]) {
      for (const k0 of [1, 3]) for (const k1 of [1, 3]) {
        for (const s0 of [1, 2]) for (const s1 of [1, 2]) {
          for (const p0 of [0, 1]) for (const p1 of [0, 1]) {
            tc.push(new TestPool2d(poolType, typeInput, [10, 10, 3, 1], k0, k1, s0, s1, p0, p1));
          }
        }
      }
    }
  }

  // im2col 1D
  tc.push(new TestIm2col('f32', 'f32', 'f32', [3000, 128, 1, 1], [3, 128, 1280, 1], 1, 0, 1, 0, 1, 0, false));
  tc.push(new TestIm2col('f32', 'f16', 'f32', [3000, 128, 1, 1], [3, 128, 1280, 1], 1, 0, 1, 0, 1, 0, false));
  tc.push(new TestIm2col('f32', 'f16', 'f16', [3000, 128, 1, 1], [3, 128, 1280, 1], 1, 0, 1, 0, 1, 0, false));
  for (const s0 of [1, 3]) for (const p0 of [0, 3]) for (const d0 of [1, 3]) {
    tc.push(new TestIm2col('f32', 'f32', 'f32', [20, 2, 2, 1], [3, 2, 2, 1], s0, 0, p0, 0, d0, 0, false));
  }

  // im2col 2D
  tc.push(new TestIm2col('f32', 'f32', 'f32'));
  tc.push(new TestIm2col('f32', 'f16', 'f32'));
  tc.push(new TestIm2col('f32', 'f16', 'f16'));
  for (const s0 of [1, 3]) for (const s1 of [1, 3]) {
    for (const p0 of [0, 3]) for (const p1 of [0, 3]) {
      for (const d0 of [1, 3]) for (const d1 of [1, 3]) {
        tc.push(new TestIm2col('f32', 'f32', 'f32', [20, 20, 2, 2], [3, 3, 2, 2], s0, s1, p0, p1, d0, d1, true));
      }
    }
  }

  // extra tests for im2col 2D
  for (const n of [32, 1024, 2048, 2560]) {
    for (const c of [1, 2]) {
      tc.push(new TestIm2col('f32', 'f16', 'f16', [12, 12, c, n], [3, 3, c, n], 1, 1, 1, 1, 1, 1, true));
    }
  }
  // (ggml leaves the large stable-diffusion im2col cases commented out.)

  tc.push(new TestConvTranspose1d());
  tc.push(new TestConvTranspose1d([3, 2, 1, 1], [2, 3, 2, 1], 3, 0, 1));
  tc.push(new TestConvTranspose1d([3, 2, 1, 1], [2, 3, 2, 1], 2, 0, 1));
  tc.push(new TestConvTranspose1d([3, 2, 1, 1], [2, 3, 2, 1], 1, 0, 1));
  tc.push(new TestConvTranspose1d([3, 2, 1, 1], [3, 2, 2, 1], 2, 0, 1));
  tc.push(new TestConvTranspose1d([3, 2, 1, 1], [3, 2, 2, 1], 1, 0, 1));
  tc.push(new TestConvTranspose1d([3, 2, 1, 1], [3, 1, 2, 1], 1, 0, 1));
  tc.push(new TestConvTranspose1d([2, 1, 1, 1], [3, 1, 1, 1], 1, 0, 1));

  tc.push(new TestArgmax());
  tc.push(new TestCountEqual());

  for (const ne3 of [1, 3]) {
    // CUDA backward pass only supports ne3 == 1
    tc.push(new TestRepeat('f32', [10, 5, 4, ne3], [1, 1, 1, 1]));
    tc.push(new TestRepeat('f32', [10, 5, 4, ne3], [2, 1, 1, 1]));
    tc.push(new TestRepeat('f32', [10, 5, 4, ne3], [1, 2, 1, 1]));
    tc.push(new TestRepeat('f32', [10, 5, 4, ne3], [1, 1, 2, 1]));
    tc.push(new TestRepeat('f32', [10, 5, 4, ne3], [1, 1, 1, 2]));
    tc.push(new TestRepeat('i32', [10, 5, 4, ne3], [2, 1, 1, 1]));
    tc.push(new TestRepeat('i16', [10, 5, 4, ne3], [1, 1, 1, 2]));
  }

  tc.push(new TestDup('f32'));
  tc.push(new TestDup('f16'));
  tc.push(new TestDup('i32'));
  tc.push(new TestDup('i16'));
  tc.push(new TestDup('f32', [10, 10, 5, 1], [0, 2, 1, 3]));
  tc.push(new TestDup('f16', [10, 10, 5, 1], [0, 2, 1, 3])); // dup by rows
  tc.push(new TestDup('f32', [10, 10, 5, 1], [1, 0, 2, 3]));
  tc.push(new TestDup('f16', [10, 10, 5, 1], [1, 0, 2, 3])); // dup dst not-contiguous
  tc.push(new TestDup('i16', [10, 8, 3, 1], [0, 2, 1, 3]));
  tc.push(new TestDup('i16', [10, 8, 3, 1], [1, 2, 0, 3]));

  for (let dim = 1; dim < 4; ++dim) tc.push(new TestSet('f32', 'f32', [6, 5, 4, 3], dim));

  for (const typeSrc of ['f16', 'f32'] as GgmlType[]) {
    for (const typeDst of ALL_TYPES) {
      tc.push(new TestCpy(typeSrc, typeDst, [256, 4, 4, 4]));
      tc.push(new TestCpy(typeSrc, typeDst, [256, 2, 3, 4], [0, 2, 1, 3])); // cpy by rows
    }
  }
  for (const typeSrc of ['f16', 'f32'] as GgmlType[]) {
    for (const typeDst of ['f16', 'f32'] as GgmlType[]) {
      tc.push(new TestCpy(typeSrc, typeDst, [256, 2, 3, 4], [1, 0, 2, 3])); // cpy not-contiguous
    }
  }

  tc.push(new TestCont());
  for (const type of ['f32', 'f16', 'bf16'] as GgmlType[]) {
    tc.push(new TestCont(type, [2, 1, 1, 1]));
    tc.push(new TestCont(type, [2, 1, 3, 5]));
    tc.push(new TestCont(type, [2, 3, 5, 7]));
  }

  const addTestBinBcast = (type: GgmlType, ne: Ne4, nr: Ne4): void => {
    for (const op of ['ADD', 'MUL', 'DIV'] as BinOp[]) tc.push(new TestBinBcast(op, type, ne, nr));
  };

  addTestBinBcast('f32', [1, 1, 8, 1], [1, 1, 1, 1]);
  addTestBinBcast('f32', [1, 1, 1, 1], [32, 1, 1, 1]);
  addTestBinBcast('f32', [1, 1, 320, 320], [1, 1, 1, 1]);
  addTestBinBcast('f32', [10, 5, 1, 1], [1, 1, 1, 1]);
  addTestBinBcast('f32', [10, 5, 4, 1], [1, 1, 1, 1]);
  addTestBinBcast('f32', [10, 5, 4, 3], [1, 1, 1, 1]);
  addTestBinBcast('f32', [10, 5, 4, 3], [2, 1, 1, 1]);
  addTestBinBcast('f32', [10, 5, 4, 3], [1, 2, 1, 1]);
  addTestBinBcast('f32', [10, 5, 4, 3], [1, 1, 2, 1]);
  addTestBinBcast('f32', [10, 5, 4, 3], [1, 1, 1, 2]);
  addTestBinBcast('f32', [10, 5, 4, 3], [1, 1, 2, 2]);
  addTestBinBcast('f32', [10, 5, 4, 3], [1, 2, 2, 2]);
  addTestBinBcast('f32', [10, 5, 4, 3], [2, 2, 2, 2]);

  // stable diffusion
  addTestBinBcast('f32', [1280, 1, 1, 1], [1, 1, 1, 1]);
  addTestBinBcast('f32', [1280, 1, 1, 1], [1, 16, 16, 1]);
  addTestBinBcast('f32', [1280, 16, 16, 1], [1, 1, 1, 1]);
  addTestBinBcast('f32', [1280, 1, 1, 1], [1, 256, 1, 1]);
  addTestBinBcast('f32', [1, 1, 1280, 1], [16, 16, 1, 1]);
  addTestBinBcast('f32', [16, 16, 1280, 1], [1, 1, 1, 1]);
  addTestBinBcast('f32', [1, 1, 1920, 1], [16, 16, 1, 1]);
  addTestBinBcast('f32', [1, 1, 2560, 1], [16, 16, 1, 1]);
  addTestBinBcast('f32', [1, 1, 1280, 1], [32, 32, 1, 1]);
  addTestBinBcast('f32', [1, 1, 1920, 1], [32, 32, 1, 1]);
  addTestBinBcast('f32', [1, 1, 640, 1], [32, 32, 1, 1]);
  addTestBinBcast('f32', [5120, 1, 1, 1], [1, 256, 1, 1]);
  addTestBinBcast('f32', [640, 1, 1, 1], [1, 1, 1, 1]);
  // (two [3,3,2560,1280] cases are commented out in ggml)

  tc.push(new TestAdd1());
  tc.push(new TestScale());

  for (const eps of [1e-6, 1e-5, 1e-3, 1e-1]) {
    tc.push(new TestNorm('f32', [64, 5, 4, 3], eps));
    tc.push(new TestRmsNorm('f32', [64, 5, 4, 3], eps));
  }

  tc.push(new TestSsmConv('f32', [4, 1536, 1, 1], [4, 1536, 1, 1]));
  tc.push(new TestSsmConv('f32', [8, 1536, 1, 1], [4, 1536, 1, 1]));
  tc.push(new TestSsmConv('f32', [4, 1536, 4, 1], [4, 1536, 1, 1]));

  tc.push(new TestSsmScan('f32', 16, 1024, 32, 4));

  tc.push(new TestRwkvWkv('f32', 32, 64, 1, 1));
  tc.push(new TestRwkvWkv('f32', 32, 64, 32, 1));
  tc.push(new TestRwkvWkv('f32', 32, 64, 32, 4));
  tc.push(new TestRwkvWkv('f32', 32, 64, 128, 4));

  for (const typeA of BASE_TYPES) {
    for (const typeB of ['f32', 'f16'] as GgmlType[]) {
      // test cases without permutation
      for (const n of [1, 16]) {
        tc.push(new TestMulMat(typeA, typeB, 16, n, 256, [1, 1], [1, 1]));
        tc.push(new TestMulMat(typeA, typeB, 16, n, 256, [10, 1], [1, 1]));
        tc.push(new TestMulMat(typeA, typeB, 16, n, 256, [10, 1], [2, 1]));
        tc.push(new TestMulMat(typeA, typeB, 16, n, 256, [10, 10], [1, 1]));
        tc.push(new TestMulMat(typeA, typeB, 16, n, 256, [10, 10], [2, 1]));
        tc.push(new TestMulMat(typeA, typeB, 16, n, 256, [10, 10], [1, 2]));
        tc.push(new TestMulMat(typeA, typeB, 16, n, 256, [10, 10], [2, 2]));
      }
      // test cases with permutation
      for (const n of [1, 8, 16]) {
        tc.push(new TestMulMat(typeA, typeB, 16, n, 256, [2, 3], [1, 1], [0, 2, 1, 3]));
        tc.push(new TestMulMat(typeA, typeB, 16, n, 256, [2, 3], [1, 1], [0, 1, 3, 2]));
        tc.push(new TestMulMat(typeA, typeB, 16, n, 256, [2, 3], [1, 1], [0, 3, 2, 1]));
      }
    }
  }
  for (const typeA of OTHER_TYPES) {
    for (const typeB of ['f32'] as GgmlType[]) {
      if (blckSize(typeA) !== 256) tc.push(new TestMulMat(typeA, typeB, 16, 1, blckSize(typeA), [1, 1], [1, 1]));
      tc.push(new TestMulMat(typeA, typeB, 16, 1, 256, [1, 1], [1, 1]));
    }
  }
  // (ggml's random-shape MUL_MAT loop is behind #if 0)

  tc.push(new TestMulMat('f16', 'f32', 64, 2, 128, [8, 1], [1, 1]));
  tc.push(new TestMulMat('f16', 'f32', 83, 2, 128, [8, 1], [4, 1]));
  tc.push(new TestMulMat('f16', 'f32', 64, 2, 64, [8, 1], [4, 1]));
  tc.push(new TestMulMat('f16', 'f32', 83, 2, 64, [8, 1], [4, 1]));
  tc.push(new TestMulMat('f16', 'f32', 64, 45, 128, [8, 1], [4, 1]));
  tc.push(new TestMulMat('f16', 'f32', 128, 45, 64, [8, 1], [4, 1]));
  // (the f16 x f16 512 x 262144 x 9216 case is commented out in ggml)

  for (const typeA of BASE_TYPES) {
    for (const typeB of ['f32'] as GgmlType[]) {
      for (const nMats of [4, 8]) {
        for (const nUsed of [1, 2, 4]) {
          for (const b of [false, true]) {
            for (const n of [1, 32]) tc.push(new TestMulMatId(typeA, typeB, nMats, nUsed, b, 512, n, 256));
          }
        }
      }
    }
  }
  for (const typeA of OTHER_TYPES) {
    for (const n of [1, 32]) tc.push(new TestMulMatId(typeA, 'f32', 4, 2, false, 512, n, 256));
  }

  for (const typeA of BASE_TYPES) {
    for (const typeB of ['f32', 'f16'] as GgmlType[]) {
      // ggml lists several of these twice; the repeats are kept
      const outProd: [number, [number, number], boolean?][] = [
        [1, [1, 1]], [1, [10, 1]], [1, [10, 1]], [1, [10, 10]], [1, [10, 10]], [1, [10, 10]], [1, [10, 10]],
        [16, [1, 1]], [16, [1, 1], true], [16, [10, 1]], [16, [10, 1]],
        [16, [10, 10]], [16, [10, 10]], [16, [10, 10]], [16, [10, 10]],
      ];
      for (const [n, bs, transB] of outProd) tc.push(new TestOutProd(typeA, typeB, 256, n, 16, bs, transB));
    }
  }

  tc.push(new TestSqr());
  tc.push(new TestSqrt());
  tc.push(new TestLog());
  tc.push(new TestSin());
  tc.push(new TestCos());
  tc.push(new TestClamp());

  tc.push(new TestDiagMaskInf('f32', [10, 10, 1, 1], 5));
  tc.push(new TestDiagMaskInf('f32', [10, 10, 3, 1], 5));
  tc.push(new TestDiagMaskInf('f32', [10, 10, 3, 2], 5));

  // (ggml's random-shape SOFT_MAX loop is behind #if 0)
  for (const mask of [false, true]) {
    for (const maxBias of [0, 8]) {
      if (!mask && maxBias > 0) continue;
      for (const scale of [1, 0.1]) {
        for (const ne0 of [16, 1024]) {
          for (const ne1 of [16, 1024]) {
            tc.push(new TestSoftMax('f32', [ne0, ne1, 1, 1], mask, scale, maxBias));
            tc.push(new TestSoftMax('f32', [ne0 - 1, ne1 - 1, 1, 1], mask, scale, maxBias));
          }
        }
      }
    }
  }
  tc.push(new TestSoftMax('f32', [16, 2, 32, 1], true, 0.1, 0));
  tc.push(new TestSoftMax('f32', [16, 2, 32, 1], false, 0.1, 0));
  tc.push(new TestSoftMax('f32', [32, 2, 32, 1], true, 0.1, 0));
  tc.push(new TestSoftMax('f32', [32, 2, 32, 1], true, 0.1, 8));

  {
    let all = true;
    for (const v of [0, 1]) {
      for (const fs of [1.0, 1.4245]) {
        for (const ef of [0.0, 0.7465]) {
          for (const af of [1.0, 1.4245]) {
            for (const type of ['f32', 'f16'] as GgmlType[]) {
              for (const ff of [false, true]) {
                // freq_factors
                const rope = (ne: Ne4, nDims: number, mode: number): void => {
                  tc.push(new TestRope(type, ne, nDims, mode, 512, fs, ef, af, ff, v));
                };
                rope([128, 32, 2, 1], 128, 0); // llama 7B

                if (all) {
                  rope([128, 40, 2, 1], 128, 0); // llama 13B
                  rope([128, 52, 2, 1], 128, 0); // llama 30B
                  rope([128, 64, 2, 1], 128, 0); // llama 65B
                }

                if (all) {
                  rope([64, 1, 2, 1], 64, 2); // neox (falcon 7B)
                  rope([64, 71, 2, 1], 64, 2); // neox (falcon 7B)
                  rope([64, 8, 2, 1], 64, 2); // neox (falcon 40B)
                  rope([80, 32, 2, 1], 20, 2); // neox (stablelm)
                  rope([80, 32, 2, 1], 32, 2); // neox (phi-2)
                }

                rope([64, 128, 2, 1], 64, 2); // neox (falcon 40B)
              }
            }
            all = false;
          }
        }
      }
    }
  }

  for (const v of [0, 1, 2, 3]) {
    for (const dim of [0, 1, 2, 3]) {
      tc.push(new TestConcat('f32', [11, 12, 13, 14], 7, dim, v));
      tc.push(new TestConcat('i32', [11, 12, 13, 14], 7, dim, v));
    }
  }

  for (const order of ['asc', 'desc'] as SortOrder[]) {
    tc.push(new TestArgsort('f32', [8, 1, 1, 1], order));
    tc.push(new TestArgsort('f32', [16, 10, 10, 10], order));
    tc.push(new TestArgsort('f32', [60, 10, 10, 10], order)); // qwen
  }

  tc.push(new TestSum());
  tc.push(new TestSumRows());
  tc.push(new TestUpscale());
  tc.push(new TestUpscale('f32', [512, 512, 3, 1], 2, true));
  tc.push(new TestUpscaleExt());
  tc.push(new TestGroupNorm());
  tc.push(new TestAcc());
  tc.push(new TestPad());
  tc.push(new TestArange());
  tc.push(new TestTimestepEmbedding());
  tc.push(new TestLeakyRelu());

  for (const hs of [64, 80, 128, 256]) {
    for (const mask of [true, false]) {
      for (const maxBias of [0, 8]) {
        if (!mask && maxBias > 0) continue;
        for (const logitSoftcap of [0, 10]) {
          if (hs !== 128 && logitSoftcap !== 0) continue;
          for (const nh of [32]) {
            for (const kv of [512, 1024]) {
              for (const nb of [1, 3, 32, 35]) {
                for (const typeKV of ['f16', 'q8_0', 'q4_0'] as GgmlType[]) {
                  tc.push(new TestFlashAttnExt(hs, nh, kv, nb, mask, maxBias, logitSoftcap, typeKV));
                }
              }
            }
          }
        }
      }
    }
  }

  tc.push(new TestCrossEntropyLoss());
  for (const wd of [0, 1e-2]) {
    // ggml passes (alpha, beta1, beta2, eps, wd) = (1, 1e-3, 0.9, 0.999, wd): kept as it is
    tc.push(new TestOptStepAdamw('f32', [10, 5, 4, 3], 1.0, 1e-3, 0.9, 0.999, wd));
  }

  // these tests are disabled in ggml to save execution time (see makeTestCasesLlm)
  return tc;
}

/** The model-block cases ggml keeps behind `#if 0` in the eval list (CLI: --llm). */
export function makeTestCasesLlm(): TestCase[] {
  return [new TestLlama(1), new TestLlama(2), new TestFalcon(1), new TestFalcon(2)];
}

/** Test cases for performance evaluation: representative of real-world use. */
export function makeTestCasesPerf(): TestCase[] {
  const tc: TestCase[] = [];
  tc.push(new TestBinBcast('ADD', 'f32', [4096, 1, 1, 1], [1, 1, 1, 1]));
  tc.push(new TestBinBcast('ADD', 'f32', [4096, 1, 1, 1], [1, 512, 1, 1]));
  for (const bs of [1, 512]) {
    for (const typeA of ALL_TYPES) {
      for (const typeB of ['f32'] as GgmlType[]) tc.push(new TestMulMat(typeA, typeB, 4096, bs, 14336, [1, 1], [1, 1]));
    }
  }
  return tc;
}
