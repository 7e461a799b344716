#!/usr/bin/env node
// weft-backend-ops: llama.cpp's test-backend-ops for weft (`weft-backend-ops --help` lists the
// modes and flags). It runs the suite as JavaScript compiled at build time (dist/), so no
// TypeScript tooling is needed at run time.
'use strict'
const { existsSync } = require('node:fs')
const { join } = require('node:path')

const cli = join(__dirname, '..', 'dist', '__test__', 'backend-ops', 'cli.js')
if (!existsSync(cli)) {
  console.error(`weft-backend-ops: ${cli} is missing; in a checkout, run: npm run build:ts`)
  process.exit(1)
}
require(cli)
