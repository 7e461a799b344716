// Test mode on the WebGPU kernels' fallback paths, as an adapter without SHADER_F16 and
// SUBGROUP runs them: WEFT_WEBGPU_DISABLE=f16,subgroup masks both when a device opens, which
// happens once per process, so the CLI runs in a child process with it set. MUL_MAT's kernels
// are the ones with feature variants (mul_mat_vec's subgroupAdd reduction, the f16 reads of
// mul_mat_vec and mul_mm); every other kernel has one form, which suite.test.ts runs.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Backend } from '../../index.js';

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const env = { ...process.env, WEFT_WEBGPU_DISABLE: 'f16,subgroup' };
const hasGpu = Backend.devices().some((d) => d.name === 'WebGPU0');

test('WebGPU0 with f16 and subgroups masked: the device reports neither, and MUL_MAT passes test mode', { skip: !hasGpu && 'no WebGPU0 device' }, async () => {
  const show = `import('./index.js').then((w) => console.log(JSON.stringify(w.Backend.devices().find((d) => d.name === 'WebGPU0').properties)))`;
  const props = JSON.parse((await run(process.execPath, ['-e', show], { cwd: root, env })).stdout);
  assert.equal(props.shader_f16, 'false');
  assert.equal(props.subgroup, 'false');

  const cli = ['--import', 'tsx', '__test__/backend-ops/cli.ts', 'test', '-b', 'WebGPU0', '-o', 'MUL_MAT', '--no-progress'];
  // The CLI exits non-zero when a case fails; its summary says which, so keep its output.
  const { stdout } = await run(process.execPath, cli, { cwd: root, env, maxBuffer: 64 << 20 }).catch(
    (e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }),
  );
  const m = /(\d+) OK, (\d+) failed, (\d+) not supported/.exec(stdout);
  assert.ok(m, `no summary in:\n${stdout.slice(-2000)}`);
  const [ok, failed, unsupported] = m.slice(1).map(Number);
  assert.equal(failed, 0, stdout.slice(-2000));
  assert.equal(unsupported, 0, 'every MUL_MAT eval case runs without the features');
  assert.ok(ok >= 259, `${ok} cases passed`);
});
