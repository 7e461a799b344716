// `npm install` in a checkout (npm's prepare step): build the native addon from source and
// compile the shipped TypeScript to dist/. Installs from the registry or a packed tarball never
// run this: they get the prebuilt addon from the weft-ml-<platform> package instead.
//
// WEFT_SKIP_ADDON_BUILD=1 compiles only the TypeScript (the release workflow's publish job,
// which gathers addons built on each platform and has no use for a host build).
import { spawnSync } from 'node:child_process'

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

function run(args) {
  const r = spawnSync(npm, args, { stdio: 'inherit', shell: process.platform === 'win32' })
  if (r.status !== 0) process.exit(r.status ?? 1)
}

if (process.env.WEFT_SKIP_ADDON_BUILD !== '1') {
  const cargo = spawnSync('cargo', ['--version'], { stdio: 'ignore', shell: process.platform === 'win32' })
  if (cargo.error || cargo.status !== 0) {
    console.error(
      'weft-ml: building from source needs Rust (cargo was not found on PATH): install it from https://rustup.rs, then run npm install again',
    )
    process.exit(1)
  }
  run(['run', 'build'])
}
run(['run', 'build:ts'])
