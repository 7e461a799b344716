// Where the suite runs from: the TypeScript sources of a checkout (tsx) or the JavaScript
// compiled into dist/ (the installed `weft-backend-ops` bin), so paths are found by walking
// up to the package root rather than counted from this file.

import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** The folder of weft-ml's package.json above this file (a checkout or an installed package). */
export function packageRoot(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const manifest = resolve(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'weft-ml') return dir;
    if (dirname(dir) === dir) return resolve(__dirname, '../..');
  }
}

/** The checkout's root, or null in an installed package (which has no Cargo.toml). */
export function checkoutRoot(): string | null {
  const root = packageRoot();
  return existsSync(resolve(root, 'Cargo.toml')) ? root : null;
}
