// Broken-kernel experiment: breaks one WebGPU shader at a time on purpose (a flipped sign, a
// shifted index, a wrong constant) and checks that the suite notices. Each mutation edits a
// copy of crates/weft/src/backend/webgpu/shaders, which the addon reads instead of its
// built-in shaders when WEFT_WEBGPU_SHADER_DIR points at it (no rebuild), then runs the
// backend-ops mode that covers the kernel on WebGPU0. Prints one line per mutation and a
// summary; exits 1 when a mutation goes unnoticed or no longer applies.
//
//   npm run build && npm run broken-kernels -- [FILTER...]
//
// FILTERs keep the mutations whose family contains one of them. The engine-test mutations
// ('cargo') build the weft crate's tests. Takes about 20 minutes on lavapipe.

import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

interface Mutation {
  /** The issue's family (part 1: every op but the matrix family; part 2: matrix kernels and quant families). */
  family: string;
  file: string;
  /** Text that occurs exactly once in the file, and what replaces it. */
  from: string;
  to: string;
  /** backend-ops arguments (mode, -o op, optional -p filter), or for 'cargo' the engine's
   * WebGPU test file (op) and test name filter (params). */
  mode: 'test' | 'grad' | 'cargo';
  op: string;
  params?: string;
}

const MUTATIONS: Mutation[] = [
  // ---- part 1: every op outside the matrix family ----
  { family: 'unary', file: 'elementwise', from: 'return x / (1.0 + exp(-x)); }', to: 'return x / (1.0 + exp(x)); }', mode: 'test', op: 'SILU' },
  { family: 'unary (gelu)', file: 'elementwise', from: '(1.0 + tanh_safe(0.7978846', to: '(1.0 - tanh_safe(0.7978846', mode: 'test', op: 'GELU' },
  { family: 'binary (broadcast)', file: 'elementwise', from: 'fn op_add(x: f32, y: f32) -> f32 { return x + y; }', to: 'fn op_add(x: f32, y: f32) -> f32 { return x - y; }', mode: 'test', op: 'ADD' },
  { family: 'scale', file: 'elementwise', from: 'return x * p.f.x; }', to: 'return -x * p.f.x; }', mode: 'test', op: 'SCALE' },
  { family: 'norm', file: 'norm', from: 'sum2 = sum2 + d * d;', to: 'sum2 = sum2 + d;', mode: 'test', op: 'NORM' },
  { family: 'group_norm', file: 'group_norm', from: 'let mean = reduce_sum(lid, sum) / f32(count);', to: 'let mean = reduce_sum(lid, sum) / f32(2u * count);', mode: 'test', op: 'GROUP_NORM' },
  { family: 'row reduction (tree)', file: 'reduce', from: 'partial[lid] = partial[lid] + partial[lid + s];', to: 'partial[lid] = partial[lid] + 0.5 * partial[lid + s];', mode: 'test', op: 'RMS_NORM' },
  { family: 'soft_max (mask, ALiBi)', file: 'soft_max', from: 'v = v + slope * mask_at(', to: 'v = v - slope * mask_at(', mode: 'test', op: 'SOFT_MAX' },
  { family: 'rope', file: 'rope', from: 'fma(x0, cs.y, x1 * cs.x)', to: 'fma(x0, cs.y, -x1 * cs.x)', mode: 'test', op: 'ROPE' },
  { family: 'rope (ext/YaRN)', file: 'rope', from: 'let ramp_mix = (1.0 - c_min(1.0, c_max(0.0, y))) * p.ext_factor;', to: 'let ramp_mix = c_min(1.0, c_max(0.0, y)) * p.ext_factor;', mode: 'test', op: 'ROPE' },
  { family: 'sum_rows', file: 'sum_rows', from: 's = s + load_a(base_a + i * p.a.nb.x);', to: 's = s - load_a(base_a + i * p.a.nb.x);', mode: 'test', op: 'SUM_ROWS' },
  { family: 'sum', file: 'sum', from: 's = s + load_a(', to: 's = s - load_a(', mode: 'test', op: 'SUM' },
  { family: 'argmax', file: 'argmax', from: 'let end = reduce_max_u32(lid, mine);', to: 'let end = reduce_max_u32(lid, mine) / 2u;', mode: 'test', op: 'ARGMAX' },
  { family: 'argsort', file: 'argsort', from: 'hi = lo + j;', to: 'hi = lo + j / 2u;', mode: 'test', op: 'ARGSORT' },
  { family: 'count_equal', file: 'count_equal', from: 'select(0u, 1u, x == y)', to: 'select(0u, 1u, x != y)', mode: 'test', op: 'COUNT_EQUAL' },
  { family: 'im2col', file: 'im2col', from: 'let ikh = (col / kw) % kh;', to: 'let ikh = (col / kw + 1u) % kh;', mode: 'test', op: 'IM2COL' },
  { family: 'pool', file: 'pool', from: 'acc = acc + v;', to: 'acc = acc + 2.0 * v;', mode: 'test', op: 'POOL_2D' },
  { family: 'conv_transpose', file: 'conv_transpose', from: 'sum = sum + d;', to: 'sum = sum - d;', mode: 'test', op: 'CONV_TRANSPOSE_1D' },
  { family: 'ssm_conv', file: 'ssm_conv', from: 'sum = sum + sx[', to: 'sum = sum - sx[', mode: 'test', op: 'SSM_CONV' },
  { family: 'ssm_scan', file: 'ssm_scan', from: 'let u = 1.0 + v;', to: 'let u = 1.0 - v;', mode: 'test', op: 'SSM_SCAN' },
  { family: 'rwkv_wkv', file: 'rwkv_wkv', from: 'dst[col + i * n] = fma(st, td[p.offs1.y + th + i], kv);', to: 'dst[col + i * n] = fma(st, td[p.offs1.y + th + i], -kv);', mode: 'test', op: 'RWKV_WKV' },
  { family: 'layout (concat)', file: 'place', from: 'c[dim] = c[dim] - p.a.ne[dim];', to: 'c[dim] = c[dim] - p.a.ne[dim] + 1u;', mode: 'test', op: 'CONCAT' },
  { family: 'layout (upscale)', file: 'place', from: 'let c = vec4<u32>(vec4<f32>(i) / p.f);', to: 'let c = vec4<u32>((vec4<f32>(i) + 0.5) / p.f);', mode: 'test', op: 'UPSCALE' },
  { family: 'timestep_embedding', file: 'generate', from: 'let freq = exp(-p.f.x * f32(j) / f32(nh));', to: 'let freq = exp(-p.f.x * f32(j + 1u) / f32(nh));', mode: 'test', op: 'TIMESTEP_EMBEDDING' },
  { family: 'acc (set)', file: 'set', from: 'v = x + y;', to: 'v = x - y;', mode: 'test', op: 'ACC' },
  { family: 'cross_entropy_loss', file: 'cross_entropy_loss', from: '- mx - log_sum)', to: '- mx + log_sum)', mode: 'test', op: 'CROSS_ENTROPY_LOSS' },
  { family: 'opt_step_adamw', file: 'opt_step_adamw', from: 'let mi = fma(m[im], p.beta1, gi * p.one_minus_beta1);', to: 'let mi = fma(m[im], p.one_minus_beta1, gi * p.beta1);', mode: 'test', op: 'OPT_STEP_ADAMW' },
  { family: 'cpy (plain, f16 halves)', file: 'cpy', from: 'bits = bits | (v << (16u * h));', to: 'bits = bits | (v << (16u * (1u - h)));', mode: 'test', op: 'CPY', params: 'type_dst=f16' },
  { family: 'cpy (quantize q4_0)', file: 'quantize', from: 'to_i8(fma_exact(x[t], id, half + 0.5))', to: 'to_i8(fma_exact(x[t], id, half + 0.4))', mode: 'test', op: 'CPY', params: 'type_dst=q4_0' },
  { family: 'cpy (quantize K-quant search)', file: 'quantize_k', from: 'iscale = (fma_exact(f32(step), rdelta, rmin) + f32(nmax)) / (mx - mn);', to: 'iscale = (fma_exact(f32(step), rdelta, rmin) + f32(nmax) + 0.5) / (mx - mn);', mode: 'test', op: 'CPY', params: 'type_dst=q4_K' },
  { family: 'cpy (quantize grid I-quant)', file: 'quantize_iq', from: 'const NSTEPS: i32 = 15;', to: 'const NSTEPS: i32 = 14;', mode: 'test', op: 'CPY', params: 'type_dst=iq3_xxs' },
  { family: 'get_rows (dequant q4_0)', file: 'dequant', from: 'return (vec4<f32>(n) - 8.0) * d;', to: 'return (vec4<f32>(n) - 7.0) * d;', mode: 'test', op: 'GET_ROWS', params: 'type=q4_0' },
  // Backward kernels: grad mode compares them with finite differences.
  // SILU's grad cases cannot see SILU_BACK: as in ggml, an element whose two gradients are
  // both 0 makes the asymmetry 0/0, the mean NaN and the check pass (inputs reach -150, so
  // every run has one); the engine test compares the kernel with the CPU instead.
  { family: 'silu_back', file: 'elementwise', from: 'return dy * s * fma(x, 1.0 - s, 1.0);', to: 'return dy * s * fma(x, 1.0 + s, 1.0);', mode: 'cargo', op: 'webgpu_elem', params: 'binaries_in_every_float_type' },
  { family: 'rms_norm_back', file: 'rms_norm_back', from: 'xdz = xdz + x * b[', to: 'xdz = xdz - x * b[', mode: 'grad', op: 'RMS_NORM' },
  { family: 'soft_max_back', file: 'soft_max_back', from: '(dy - dot_y_dy) * b[', to: '(dy + dot_y_dy) * b[', mode: 'grad', op: 'SOFT_MAX' },
  { family: 'get_rows_back', file: 'get_rows_back', from: 'sum = sum + load(', to: 'sum = sum - load(', mode: 'cargo', op: 'webgpu_quant', params: 'get_rows_back_matches_cpu' },
  { family: 'pool_2d_back', file: 'pool_back', from: 'let grad = g[gplane + u32(ox) * p.g.nb.x + u32(oy) * p.g.nb.y];', to: 'let grad = -g[gplane + u32(ox) * p.g.nb.x + u32(oy) * p.g.nb.y];', mode: 'grad', op: 'POOL_2D' },
  { family: 'im2col_back', file: 'im2col_back', from: 'grad = grad + g[', to: 'grad = grad - g[', mode: 'grad', op: 'IM2COL' },
  // ---- part 2: matrix kernels (each shape) and the quant families they read ----
  { family: 'mat-vec kernel', file: 'mul_mat_vec', from: 'acc[r * NC + c] = acc[r * NC + c] + dot(av, bv[c]);', to: 'acc[r * NC + c] = acc[r * NC + c] - dot(av, bv[c]);', mode: 'test', op: 'MUL_MAT' },
  { family: 'mat-vec subgroup reduction', file: 'mul_mat_vec', from: 'let s = subgroupAdd(acc[v]);', to: 'let s = subgroupMax(acc[v]);', mode: 'test', op: 'MUL_MAT' },
  { family: 'tiled GEMM', file: 'mul_mm', from: 'acc[2u * i + 9u] = acc[2u * i + 9u] + a_hi[i] * b_hi;', to: 'acc[2u * i + 9u] = acc[2u * i + 9u] - a_hi[i] * b_hi;', mode: 'test', op: 'MUL_MAT' },
  { family: 'dequant bf16', file: 'dequant', from: 'bf16_to_f32(hi, 0u), bf16_to_f32(hi, 1u)', to: 'bf16_to_f32(hi, 1u), bf16_to_f32(hi, 0u)', mode: 'test', op: 'GET_ROWS', params: 'type=bf16' },
  { family: 'matrix a as bf16', file: 'mm_common', from: 'return halves4(a[row / 4u + c], true);', to: 'return halves4(a[row / 4u + c], false);', mode: 'test', op: 'MUL_MAT', params: 'type_a=bf16' },
  { family: 'dequant legacy (q8_0)', file: 'dequant', from: 'return vec4<f32>(q_sbytes4(q_u32(block_byte + 2u + 4u * j))) * d;', to: 'return vec4<f32>(q_sbytes4(q_u32(block_byte + 2u + 4u * j))) * -d;', mode: 'test', op: 'MUL_MAT', params: 'type_a=q8_0' },
  { family: 'dequant K-quant (q4_K)', file: 'dequant', from: 'let q = q_nibbles4(q_u32(block_byte + 16u + 32u * c + e % 32u), hi);', to: 'let q = q_nibbles4(q_u32(block_byte + 16u + 32u * c + e % 32u), !hi);', mode: 'test', op: 'MUL_MAT', params: 'type_a=q4_K' },
  { family: 'dequant K-quant (q6_K)', file: 'dequant', from: '>> vec4<u32>(2u * k)) & vec4<u32>(3u);', to: '>> vec4<u32>(2u * k + 1u)) & vec4<u32>(3u);', mode: 'test', op: 'MUL_MAT', params: 'type_a=q6_K' },
  { family: 'dequant grid I-quant (iq2_xxs)', file: 'dequant', from: '(0.5 + f32(aux >> 28u)) * 0.25;', to: '(0.5 + f32(aux >> 28u)) * 0.5;', mode: 'test', op: 'MUL_MAT', params: 'type_a=iq2_xxs' },
  { family: 'dequant grid I-quant (iq1_s)', file: 'dequant', from: 'let delta = select(0.125, -0.125, (qh & 0x8000u) != 0u);', to: 'let delta = select(-0.125, 0.125, (qh & 0x8000u) != 0u);', mode: 'test', op: 'MUL_MAT', params: 'type_a=iq1_s' },
  { family: 'dequant non-linear (iq4_nl)', file: 'dequant', from: 'return d * vec4<f32>(KVALUES_IQ4NL[n.x]', to: 'return -d * vec4<f32>(KVALUES_IQ4NL[n.x]', mode: 'test', op: 'MUL_MAT', params: 'type_a=iq4_nl' },
  // No eval case reads the ternary types; the engine test reads every type.
  { family: 'dequant ternary (tq1_0)', file: 'dequant', from: 'n = (e - 160u) / 16u;', to: 'n = (e - 160u) / 16u + 1u;', mode: 'cargo', op: 'webgpu_quant', params: 'get_rows_matches_cpu_for_every_type' },
  { family: 'mul_mat_id', file: 'mul_mat_id', from: 'acc = acc + row4(row, g) * b4(b_at + 4u * g);', to: 'acc = acc - row4(row, g) * b4(b_at + 4u * g);', mode: 'test', op: 'MUL_MAT_ID' },
  { family: 'mul_mat_id (routing)', file: 'mul_mat_id', from: 'let e = ids[p.offs.z + slot * p.ids.nb.x + token * p.ids.nb.y];', to: 'let e = ids[p.offs.z + ((slot + 1u) % n_used) * p.ids.nb.x + token * p.ids.nb.y];', mode: 'test', op: 'MUL_MAT_ID' },
  { family: 'out_prod', file: 'out_prod', from: 'acc = fma(x, vec4<f32>(wj), acc);', to: 'acc = fma(-x, vec4<f32>(wj), acc);', mode: 'test', op: 'OUT_PROD' },
  { family: 'out_prod (quantized a)', file: 'out_prod', from: 'acc = fma(row4(a_mat + j * p.a.nb.y, g), vec4<f32>(wj), acc);', to: 'acc = fma(row4(a_mat + j * p.a.nb.y, g), vec4<f32>(-wj), acc);', mode: 'test', op: 'OUT_PROD', params: 'type_a=q4_0' },
  { family: 'flash_attn (online softmax)', file: 'flash_attn', from: 'let ms = exp(m - m_new);', to: 'let ms = exp(m_new - m);', mode: 'test', op: 'FLASH_ATTN_EXT', params: 'hs=64,nh=32,kv=512' },
  { family: 'flash_attn (ALiBi)', file: 'flash_attn', from: 'mv = slope * half_to_f32(mask[mi / 2u], mi);', to: 'mv = half_to_f32(mask[mi / 2u], mi);', mode: 'test', op: 'FLASH_ATTN_EXT', params: 'hs=64,nh=32,kv=512' },
  { family: 'flash_attn (softcap)', file: 'flash_attn', from: 'x = p.softcap * tanh_safe(x);', to: 'x = p.softcap * tanh_safe(0.5 * x);', mode: 'test', op: 'FLASH_ATTN_EXT', params: 'logit_softcap=10.000000,type_KV=f16' },
  { family: 'flash_attn (quantized K/V)', file: 'dequant', from: 'return (vec4<f32>(n) - 8.0) * d;', to: 'return (vec4<f32>(n) - 7.0) * d;', mode: 'test', op: 'FLASH_ATTN_EXT', params: 'type_KV=q4_0' },
];

const root = resolve(import.meta.dirname, '..');
const shaders = join(root, 'crates/weft/src/backend/webgpu/shaders');
const filters = process.argv.slice(2);
const chosen = MUTATIONS.filter((m) => filters.length === 0 || filters.some((f) => m.family.includes(f)));
const work = mkdtempSync(join(tmpdir(), 'weft-broken-'));
let missed = 0;
let stale = 0;
try {
  for (const m of chosen) {
    rmSync(work, { recursive: true, force: true });
    cpSync(shaders, work, { recursive: true });
    const path = join(work, `${m.file}.wgsl`);
    const text = readFileSync(path, 'utf8');
    const count = text.split(m.from).length - 1;
    if (count !== 1) {
      console.log(`STALE   ${m.family}: '${m.from}' occurs ${count} times in ${m.file}.wgsl`);
      stale++;
      continue;
    }
    writeFileSync(path, text.replace(m.from, m.to));
    const [cmd, args] =
      m.mode === 'cargo'
        ? ['cargo', ['test', '-q', '-p', 'weft', '--features', 'webgpu', '--test', m.op, '--', '--test-threads', '1', m.params ?? '']]
        : [process.execPath, ['--import', 'tsx', join(root, '__test__/backend-ops/cli.ts'), m.mode, '-b', 'WebGPU0', '-o', m.op, ...(m.params ? ['-p', m.params] : [])]];
    const started = Date.now();
    const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', env: { ...process.env, WEFT_WEBGPU_SHADER_DIR: work } });
    const out = `${r.stdout}${r.stderr}`;
    const secs = ((Date.now() - started) / 1000).toFixed(0);
    const where = m.mode === 'cargo' ? `cargo test --test ${m.op} ${m.params}` : `${m.mode} -o ${m.op}${m.params ? ` -p ${m.params}` : ''}`;
    // A filter that selects nothing proves nothing.
    if (/progress: 0\/0 cases|running 0 tests/.test(out)) {
      console.log(`STALE   ${m.family}: ${where} selects no case`);
      stale++;
      continue;
    }
    const failed = (out.match(/ FAIL\b|failed: |panicked at/g) ?? []).length;
    const caught = r.status !== 0;
    if (!caught) missed++;
    console.log(`${caught ? 'caught ' : 'MISSED '} ${m.family.padEnd(34)} ${m.file}.wgsl  (${where}: exit ${r.status}, ${failed} failing lines, ${secs} s)`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
console.log(`\n${chosen.length - missed - stale}/${chosen.length} caught, ${missed} missed, ${stale} stale`);
process.exit(missed + stale > 0 ? 1 : 0);
