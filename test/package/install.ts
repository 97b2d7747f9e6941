/**
 * The package as a user installs it: the packed tarball put into an empty ESM project without the network, beside
 * the packages a user's project would add, and this repository's examples turned into that project's programs.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { keylessEnv, REPO } from '../cli/helpers.js';

const run = promisify(execFile);

export const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  version: string;
  license: string;
  main: string;
  types: string;
  bin: Record<string, string>;
  engines: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  exports: Record<string, { types: string; default: string }>;
};

export interface Packed {
  filename: string;
  integrity: string;
  files: { path: string }[];
}

/** A command's output, or an error that carries it (npm explains its failures on stderr). */
export async function sh(file: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<string> {
  try {
    const { stdout } = await run(file, args, { cwd, env: keylessEnv(env), maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${file} ${args.join(' ')} failed:\n${stdout ?? ''}\n${stderr ?? ''}`);
  }
}

interface LockEntry {
  dev?: boolean;
  devOptional?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

/**
 * The lock entries `roots` need with everything they depend on, each dependency found as Node finds it: in the
 * nearest `node_modules` at or above the package that asks for it.
 */
function closure(packages: Record<string, LockEntry>, roots: string[]): Set<string> {
  const needed = new Set<string>();
  const visit = (path: string) => {
    if (needed.has(path)) return;
    needed.add(path);
    const entry = packages[path] as LockEntry;
    for (const name of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) {
      const levels = path.split('/node_modules/');
      for (let depth = levels.length; depth >= 0; depth--) {
        const at = [...levels.slice(0, depth), name].join('/node_modules/');
        const found = depth === 0 ? `node_modules/${name}` : at;
        if (packages[found]) {
          visit(found);
          break;
        }
      }
    }
  };
  for (const root of roots) visit(`node_modules/${root}`);
  return needed;
}

/**
 * A lock file for a project that depends on the tarball, on zod (which the README's tools are written with) and on
 * `extra` (optional peers, or packages the examples use), naming the same versions this repository's lock file holds.
 * The install must not touch the network, and npm's cache after `npm ci` holds every dependency's tarball but none
 * of the registry's metadata, so npm could not resolve a version range offline; from a lock file it needs only
 * the tarballs. The entries copied are the ones npm marks as needed outside development, and `extra` with their
 * own dependencies, so a dependency the package uses but declares only as a dev dependency is missing here, as it
 * would be for a user.
 */
function consumerLock(dependencies: Record<string, string>, integrity: string, extra: string[]): object {
  const repoLock = JSON.parse(readFileSync(join(REPO, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, LockEntry>;
  };
  const packages: Record<string, object> = {
    '': { name: 'consumer', dependencies },
    'node_modules/troupe': {
      version: pkg.version,
      resolved: dependencies.troupe,
      integrity,
      license: pkg.license,
      dependencies: pkg.dependencies,
      peerDependencies: pkg.peerDependencies,
      peerDependenciesMeta: pkg.peerDependenciesMeta,
      bin: pkg.bin,
      engines: pkg.engines,
    },
  };
  const wanted = closure(repoLock.packages, extra);
  for (const [path, entry] of Object.entries(repoLock.packages)) {
    if (path === '' || ((entry.dev || entry.devOptional) && !wanted.has(path))) continue;
    const { dev: _dev, devOptional: _devOptional, ...kept } = entry;
    packages[path] = kept;
  }
  return { name: 'consumer', lockfileVersion: 3, requires: true, packages };
}

/** `npm pack` into `dir` (which builds first, through `prepack`). */
export async function pack(dir: string): Promise<Packed> {
  const out = await sh('npm', ['pack', '--json', '--pack-destination', dir], REPO);
  return (JSON.parse(out) as Packed[])[0] as Packed;
}

/** Installs the tarball, zod and `extra` (at this repository's versions) into the empty folder `dir`, offline. */
export async function install(dir: string, tarball: string, packed: Packed, extra: string[]): Promise<void> {
  const versions = extra.map((name) => [name, pkg.devDependencies[name] as string]);
  const dependencies = { troupe: tarball, zod: pkg.dependencies.zod as string, ...Object.fromEntries(versions) };
  const manifest = { name: 'consumer', private: true, type: 'module', dependencies };
  writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify(consumerLock(dependencies, packed.integrity, extra)));
  // --ignore-scripts: better-sqlite3's install script fetches or compiles its native binding, which needs the
  // network. Where it is installed, the binding this checkout built is copied in instead, as a prebuilt download
  // would put it there.
  await sh('npm', ['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], dir);
  if (extra.includes('better-sqlite3')) {
    const release = 'node_modules/better-sqlite3/build/Release';
    mkdirSync(join(dir, release), { recursive: true });
    copyFileSync(join(REPO, release, 'better_sqlite3.node'), join(dir, release, 'better_sqlite3.node'));
  }
}

/** The packages a project's node_modules holds, the bytes of its files, and the packages with an install script. */
export function measure(dir: string): { packages: string[]; bytes: number; installScripts: string[] } {
  const installed = JSON.parse(readFileSync(join(dir, 'node_modules/.package-lock.json'), 'utf8')) as {
    packages: Record<string, { hasInstallScript?: boolean }>;
  };
  const name = (path: string) => path.slice(path.lastIndexOf('node_modules/') + 13);
  const entries = Object.entries(installed.packages);
  const size = (path: string): number =>
    readdirSync(path, { withFileTypes: true }).reduce((sum, entry) => {
      const full = join(path, entry.name);
      if (entry.isDirectory()) return sum + size(full);
      return entry.isFile() ? sum + statSync(full).size : sum;
    }, 0);
  return {
    packages: entries.map(([path]) => name(path)),
    bytes: size(join(dir, 'node_modules')),
    installScripts: entries.filter(([, entry]) => entry.hasInstallScript).map(([path]) => name(path)),
  };
}

/** The first ```ts block under a README heading. */
export function readmeExample(heading: string): string {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf(`\n${heading}\n`));
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error(`README.md has no ts example under ${heading}`);
  return block;
}

/**
 * `examples/*.ts` as programs of the project in `dir`: types stripped, and each import of this checkout's source
 * replaced by the package entry that publishes it (from package.json "exports"). An example that imports a module
 * no entry publishes is refused: a user could not write it.
 */
export function installExamples(dir: string): void {
  const entries = new Map(
    Object.entries(pkg.exports).map(([key, { default: file }]) => [
      file.replace(/^\.\/dist\//, '../'),
      `troupe${key.slice(1)}`,
    ]),
  );
  mkdirSync(join(dir, 'examples'), { recursive: true });
  for (const file of readdirSync(join(REPO, 'examples')).filter((name) => name.endsWith('.ts'))) {
    const source = readFileSync(join(REPO, 'examples', file), 'utf8').replace(
      /(from |import\()'(\.\.\/[^']+)'/g,
      (_, keyword: string, path: string) => {
        const entry = entries.get(path);
        if (!entry) throw new Error(`examples/${file} imports ${path}, which no package entry publishes`);
        return `${keyword}'${entry}'`;
      },
    );
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
      fileName: file,
    });
    writeFileSync(join(dir, 'examples', file.replace(/\.ts$/, '.js')), outputText);
  }
}
