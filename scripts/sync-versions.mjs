// `npm version` step (after `napi version` has set npm/*/package.json): point the root
// package's optionalDependencies at the new version, so every weft-ml-<platform> package
// is required at exactly the version it is published with.
import { readFileSync, writeFileSync } from 'node:fs'

const path = new URL('../package.json', import.meta.url)
const pkg = JSON.parse(readFileSync(path, 'utf8'))
for (const name of Object.keys(pkg.optionalDependencies ?? {})) {
  if (name.startsWith(`${pkg.name}-`)) pkg.optionalDependencies[name] = pkg.version
}
writeFileSync(path, JSON.stringify(pkg, null, 2) + '\n')
