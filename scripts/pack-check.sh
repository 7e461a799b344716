#!/usr/bin/env bash
# The consumer path, end to end: pack weft-ml and the host's weft-ml-<platform> package
# (holding the addon `npm run build` made), install both tarballs into a fresh app with
# cargo off PATH and npm offline, then run the README's example as ESM, as CommonJS and as
# TypeScript, and `npx weft-backend-ops support -o ADD`. Needs a built checkout (npm install).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
say() { printf '\n-- %s\n' "$*"; }
fail() { echo "pack-check: $*" >&2; exit 1; }

abi=$(node -p "const a = process.platform + '-' + process.arch; process.platform === 'linux' ? a + '-gnu' : process.platform === 'win32' ? a + '-msvc' : a")
name=$(node -p "require('./package.json').name")
version=$(node -p "require('./package.json').version")
addon="weft.$abi.node"
[ -f "$addon" ] || fail "$addon is missing: build it first (npm install, or npm run build)"
[ -f dist/__test__/backend-ops/cli.js ] || fail "dist/ is missing: build it first (npm install, or npm run build:ts)"
[ -d "npm/$abi" ] || fail "no platform package npm/$abi for this host"

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-pack-check.XXXXXX")
trap 'rm -rf "$work"' EXIT

say "manifest: optionalDependencies pin every platform package at $version"
node -e "
  const p = require('./package.json')
  const want = p.napi.targets.length
  const deps = Object.entries(p.optionalDependencies ?? {}).filter(([n]) => n.startsWith(p.name + '-'))
  const bad = deps.filter(([, v]) => v !== p.version)
  if (deps.length !== want || bad.length) { console.error('optionalDependencies:', p.optionalDependencies); process.exit(1) }
  if (Object.keys(p.dependencies ?? {}).length) { console.error('runtime dependencies:', p.dependencies); process.exit(1) }
  for (const d of require('fs').readdirSync('npm')) {
    const q = require('./npm/' + d + '/package.json')
    if (q.name !== p.name + '-' + d || q.version !== p.version) { console.error('npm/' + d, q.name, q.version); process.exit(1) }
  }
  console.log(deps.map(([n, v]) => n + '@' + v).join('\n'))
"

say "dist/ requires nothing outside itself but packages (shipped code imports the binding as '$name')"
node -e "
  const fs = require('fs'), path = require('path')
  const dist = path.resolve('dist'), bad = []
  const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).forEach((e) => {
    const f = path.join(d, e.name)
    if (e.isDirectory()) return walk(f)
    if (!f.endsWith('.js')) return
    for (const [, spec] of fs.readFileSync(f, 'utf8').matchAll(/require\\(\"(\\.[^\"]*)\"\\)/g)) {
      if (!path.resolve(path.dirname(f), spec).startsWith(dist + path.sep)) bad.push(path.relative(dist, f) + ': ' + spec)
    }
  })
  walk(dist)
  if (bad.length) { console.error('relative requires that leave dist/:', bad); process.exit(1) }
  console.log('ok')
"

say "pack $name (no build: the tarball is what the checkout holds)"
npm pack --ignore-scripts --pack-destination "$work" --json >"$work/pack.json"
node -e "
  const [p] = require('$work/pack.json')
  const files = p.files.map((f) => f.path)
  const must = ['index.js', 'index.d.ts', 'LICENSE', 'README.md', 'bin/weft-backend-ops.js', 'dist/__test__/backend-ops/cli.js']
  const missing = must.filter((f) => !files.includes(f))
  const stray = files.filter((f) => /\.node$|^src\/|^crates\/|\.test\.|\.ts$/.test(f) && !f.endsWith('.d.ts'))
  console.log(p.filename + ': ' + p.entryCount + ' files, ' + (p.size / 1024).toFixed(0) + ' KiB packed')
  if (missing.length || stray.length) { console.error('missing:', missing, 'should not ship:', stray); process.exit(1) }
"

say "pack $name-$abi with $addon"
cp -r "npm/$abi" "$work/platform"
cp "$addon" "$work/platform/"
(cd "$work/platform" && npm pack --pack-destination "$work" --json >"$work/pack-platform.json")
node -e "const [p] = require('$work/pack-platform.json'); console.log(p.filename + ': ' + p.files.map((f) => f.path).join(', ') + ', ' + (p.size / 1048576).toFixed(1) + ' MiB packed')"

# The consumer side: no Rust toolchain, and npm offline (the app needs only the two tarballs).
say "fresh app: install both tarballs, cargo off PATH, npm offline"
path=""
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -n "$d" ] && [ ! -e "$d/cargo" ] && [ ! -e "$d/rustc" ] && path="${path:+$path:}$d"
done
export PATH="$path" npm_config_offline=true npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
if command -v cargo >/dev/null; then fail "cargo is still on PATH"; fi
echo "cargo on PATH: none"
app="$work/app"
mkdir -p "$app"
cd "$app"
echo '{ "name": "pack-check-app", "private": true }' >package.json
npm install --loglevel=error "$work/$name-$version.tgz" "$work/$name-$abi-$version.tgz"
ls node_modules
for dev in tsx esbuild typescript; do
  [ ! -e "node_modules/$dev" ] || fail "the install pulled in $dev"
done

# The README's examples, extracted from it (each follows a `<!-- pack-check: FILE -->` line).
node -e "
  const lines = require('fs').readFileSync('$repo/README.md', 'utf8').split('\n')
  let n = 0
  for (let i = 0; i < lines.length; i++) {
    const m = /^<!-- pack-check: (\S+) -->$/.exec(lines[i])
    if (!m) continue
    let j = i + 1
    if (!lines[j].startsWith('\`\`\`')) throw new Error('README: no code block after ' + lines[i])
    const body = []
    while (!lines[++j].startsWith('\`\`\`')) body.push(lines[j])
    require('fs').writeFileSync(m[1], body.join('\n') + '\n')
    n++
  }
  if (n < 2) throw new Error('README: expected the ESM and CommonJS examples, found ' + n)
"
cp example.mjs example.mts

# Hand-worked: mulMat(a, b) = [[-2, -2], [4, 13]] by rows of b, soft_max per row:
# [0.5, 0.5] and [1/(1+e^9), e^9/(1+e^9)] = [0.00012339, 0.99987661].
check_output() {
  local what=$1 out=$2
  printf '%s\n' "$out"
  node -e "
    const m = process.argv[1].match(/\[([^\]]*)\]/)
    const got = m ? m[1].split(',').map(Number) : []
    const want = [0.5, 0.5, 1 / (1 + Math.exp(9)), 1 / (1 + Math.exp(-9))]
    if (got.length !== 4 || got.some((g, i) => Math.abs(g - want[i]) > 1e-6)) {
      console.error('$what printed', got, 'expected', want); process.exit(1)
    }
  " "$out"
  echo "ok: $what"
}

say "README example as ESM (example.mjs)"
check_output ESM "$(node example.mjs)"

say "README example as CommonJS (example.cjs)"
check_output CommonJS "$(node example.cjs)"

say "README example as TypeScript (example.mts, type-checked against the package's index.d.ts and compiled by tsc)"
cat >tsconfig.json <<JSON
{
  "compilerOptions": {
    "target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext", "strict": true,
    "typeRoots": ["$repo/node_modules/@types"], "types": ["node"], "skipLibCheck": false,
    "outDir": "ts-out"
  },
  "files": ["example.mts"]
}
JSON
node "$repo/node_modules/typescript/bin/tsc" -p tsconfig.json
check_output TypeScript "$(node ts-out/example.mjs)"

say "npx weft-backend-ops support -o ADD"
npx --no weft-backend-ops support -o ADD --no-progress
say "pack-check: ok"
