#!/usr/bin/env node
// weft-backend-ops: test-backend-ops for weft (see __test__/backend-ops/cli.ts for the flags).
// The suite is TypeScript: tsx (a dependency) compiles it on the fly, through both of Node's
// module loaders since the package is CommonJS.
import { register as registerCjs } from 'tsx/cjs/api';
import { register as registerEsm } from 'tsx/esm/api';

registerCjs();
registerEsm();
await import('../__test__/backend-ops/cli.ts');
