/**
 * The package's declarations as they are published: `tsc -p tsconfig.build.json` (which strips `@internal`) with
 * declarations only, into a folder of the caller's choosing, and the entries `package.json` exports mapped into it.
 * `npm run check:api` and test/api/declarations.test.ts read them.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Writes the `.d.ts` of src/ and machines/ under `out`, laid out as dist/ is; throws with tsc's output on an error. */
export function buildDeclarations(out: string): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const args = [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--emitDeclarationOnly'];
  const result = spawnSync(process.execPath, [...args, '--declarationMap', 'false', '--outDir', out], {
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`tsc failed to emit declarations:\n${result.stdout}${result.stderr}`);
}

export interface PackageEntry {
  /** How a program imports it: `troupe`, `troupe/host`, … */
  name: string;
  /** Its `.d.ts` under the folder `buildDeclarations` wrote. */
  types: string;
}

/** Every entry of `package.json`'s `exports`, with its declarations under `out`. */
export function packageEntries(out: string): PackageEntry[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, { types: string }>;
  };
  return Object.entries(pkg.exports).map(([path, { types }]) => ({
    name: path === '.' ? pkg.name : `${pkg.name}/${path.slice(2)}`,
    types: join(out, types.replace(/^\.\/dist\//, '')),
  }));
}
