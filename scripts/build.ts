/**
 * `npm run build` (and `npm pack`, through `prepack`): compiles src/ and machines/ into dist/ and copies the files
 * the code reads from disk at run time beside the modules that read them, so dist/ alone is the package.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Read at run time, relative to the module that reads them (src/inspect/server.ts serves the inspector page). */
const ASSET_DIRS = ['src/inspect/page'];

// A module deleted from src/ must not live on in the package from an older build.
rmSync(join(root, 'dist'), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const compiled = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
if (compiled.status !== 0) process.exit(compiled.status ?? 1);
for (const dir of ASSET_DIRS) cpSync(join(root, dir), join(root, 'dist', dir), { recursive: true });
