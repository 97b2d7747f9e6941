/**
 * `npm run build` (and `npm pack`, through `prepack`): compiles src/ and machines/ into dist/, copies the files
 * the code reads from disk at run time beside the modules that read them, so dist/ alone is the package, and makes
 * the bin executable, so `./dist/src/cli/index.js` runs in a checkout as it does once npm has installed it.
 *
 * `--bench` compiles bench/ with them (tsconfig.bench.json), into dist/bench: `npm run bench` measures each row in
 * plain node on compiled JavaScript, as the peer harness does, because a TypeScript loader in the measured process
 * (tsx runs its hooks on a thread of their own) adds tens of MB to its peak RSS, more to a row that loads more
 * modules. `npm pack` builds without it, so the package never holds the bench.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const project = join(root, args.includes('--bench') ? 'tsconfig.bench.json' : 'tsconfig.build.json');
/** dist/, or the folder given as an argument (a test builds into a temporary one). */
const outArg = args.find((arg) => !arg.startsWith('--'));
const out = outArg ? resolve(outArg) : join(root, 'dist');
/** Read at run time, relative to the module that reads them (src/inspect/server.ts serves the inspector page). */
const ASSET_DIRS = ['src/inspect/page'];

// A module deleted from src/ must not live on in the package from an older build.
rmSync(out, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const compiled = spawnSync(process.execPath, [tsc, '-p', project, '--outDir', out], {
  stdio: 'inherit',
});
if (compiled.status !== 0) process.exit(compiled.status ?? 1);
for (const dir of ASSET_DIRS) cpSync(join(root, dir), join(out, dir), { recursive: true });

// tsc writes every file 644 and keeps the source's first line: npm chmods a bin when it installs the package, but
// nothing does in a checkout, where a bin without the mode or the `#!` line fails as "Permission denied".
const { bin } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin: Record<string, string> };
for (const [name, file] of Object.entries(bin)) {
  const path = join(out, relative('dist', file));
  if (!readFileSync(path, 'utf8').startsWith('#!/usr/bin/env node\n')) {
    console.error(`build: the bin ${name} (${file}) does not start with #!/usr/bin/env node`);
    process.exit(1);
  }
  chmodSync(path, 0o755);
}
