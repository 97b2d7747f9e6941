/**
 * The package as a user gets it: `npm pack` (which builds first, through `prepack`), the tarball installed into a
 * fresh project without the network, and then the README's first example, the `troupe` bin and the inspector run
 * from that installation, never from this checkout.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keylessEnv, REPO, sampleCopy } from '../cli/helpers.js';

const run = promisify(execFile);
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
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
/** Every public entry point, with one value each must export. */
const ENTRY_POINTS: Record<string, string> = {
  troupe: 'createAgent',
  'troupe/host': 'hostedAgent',
  'troupe/machines': 'toMermaid',
  'troupe/testing': 'createRunRecorder',
  'troupe/tools': 'createWorkspaceTools',
  'troupe/mcp': 'connectMcpServers',
  'troupe/restate': 'agentObject',
  'troupe/restate/dev': 'startRestateDevServer',
};
const PAGE_FILES = readdirSync(join(REPO, 'src/inspect/page'));

interface Packed {
  filename: string;
  integrity: string;
  files: { path: string }[];
}

let work: string;
/** Every optional peer installed: each feature runs. */
let project: string;
/** Only zod and openai beside troupe: what one agent on one provider installs. */
let lean: string;
let packed: Packed;

/** A command's output, or an error that carries it (npm explains its failures on stderr). */
async function sh(file: string, args: string[], cwd: string): Promise<string> {
  try {
    const { stdout } = await run(file, args, { cwd, env: keylessEnv(), maxBuffer: 64 * 1024 * 1024 });
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
 * the optional peers `peerNames`, naming the same versions this repository's lock file holds.
 * The install must not touch the network, and npm's cache after `npm ci` holds every dependency's tarball but none
 * of the registry's metadata, so npm could not resolve a version range offline; from a lock file it needs only
 * the tarballs. The entries copied are the ones npm marks as needed outside development, and `peerNames` with their
 * own dependencies, so a dependency the package uses but declares only as a dev dependency is missing here, as it
 * would be for a user.
 */
function consumerLock(dependencies: Record<string, string>, integrity: string, peerNames: string[]): object {
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
  const peers = closure(repoLock.packages, peerNames);
  for (const [path, entry] of Object.entries(repoLock.packages)) {
    if (path === '' || ((entry.dev || entry.devOptional) && !peers.has(path))) continue;
    const { dev: _dev, devOptional: _devOptional, ...kept } = entry;
    packages[path] = kept;
  }
  return { name: 'consumer', lockfileVersion: 3, requires: true, packages };
}

/** The first ```ts block under a README heading. */
function readmeExample(heading: string): string {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf(`\n${heading}\n`));
  const block = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error(`README.md has no ts example under ${heading}`);
  return block;
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'troupe-package-'));
  project = join(work, 'consumer');
  mkdirSync(project);
  lean = join(work, 'lean');
  mkdirSync(lean);
  const out = await sh('npm', ['pack', '--json', '--pack-destination', work], REPO);
  packed = (JSON.parse(out) as Packed[])[0] as Packed;
  const tarball = `file:${join(work, packed.filename)}`;
  const install = async (dir: string, peerNames: string[]) => {
    const peers = peerNames.map((name) => [name, pkg.devDependencies[name] as string]);
    const dependencies = { troupe: tarball, zod: pkg.dependencies.zod as string, ...Object.fromEntries(peers) };
    const manifest = { name: 'consumer', private: true, type: 'module', dependencies };
    writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
    const lock = consumerLock(dependencies, packed.integrity, peerNames);
    writeFileSync(join(dir, 'package-lock.json'), JSON.stringify(lock, null, 2));
    // --ignore-scripts: better-sqlite3's install script fetches or compiles its native binding, which needs the
    // network; nothing below opens a SQLite store, and its module loads the binding only when one is opened.
    await sh('npm', ['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], dir);
  };
  await install(project, Object.keys(pkg.peerDependencies));
  await install(lean, ['openai']);
}, 600_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
}, 120_000);

describe('the npm package', () => {
  it('installs for one agent on OpenAI without the other SDKs, a native build or an HTTP server framework', async () => {
    const installed = JSON.parse(readFileSync(join(lean, 'node_modules/.package-lock.json'), 'utf8')) as {
      packages: Record<string, { hasInstallScript?: boolean }>;
    };
    const names = Object.keys(installed.packages).map((path) => path.slice(path.lastIndexOf('node_modules/') + 13));
    const absent = Object.keys(pkg.peerDependencies).filter((name) => name !== 'openai');
    for (const name of [...absent, 'express', 'hono', 'fastify', 'koa']) expect(names, name).not.toContain(name);
    expect(names).toContain('openai');
    expect(Object.values(installed.packages).filter((entry) => entry.hasInstallScript)).toEqual([]);
    writeFileSync(
      join(lean, 'example.mjs'),
      [
        readmeExample('## An agent in twenty lines'),
        'console.log(JSON.stringify({ stopReason: result.stopReason, text: result.text }));',
        "const { SqliteStore } = await import('troupe');",
        "try { new SqliteStore('sessions.db'); } catch (error) { console.log(error.code, error.message); }",
      ].join('\n'),
    );
    const lines = (await sh(process.execPath, ['example.mjs'], lean)).trim().split('\n');
    expect(JSON.parse(lines[0] as string)).toEqual({ stopReason: 'completed', text: 'Go to Lisbon.' });
    expect(lines[1]).toBe('missing_peer SqliteStore needs better-sqlite3: npm install better-sqlite3@12');
  });

  it('holds the built library, the inspector page, README and LICENSE, and none of the repository tooling', () => {
    const paths = packed.files.map((file) => file.path);
    const outside = paths.filter((path) => !/^dist\/(src|machines)\//.test(path));
    expect(outside.sort()).toEqual(['LICENSE', 'README.md', 'package.json']);
    expect(paths.filter((path) => /(^|\/)(test|bench|fixtures|examples|scripts)\/|\.test\./.test(path))).toEqual([]);
    for (const file of PAGE_FILES) expect(paths).toContain(`dist/src/inspect/page/${file}`);
    const targets = [
      pkg.main,
      pkg.types,
      ...Object.values(pkg.bin),
      ...Object.values(pkg.exports).flatMap((entry) => [entry.types, entry.default]),
    ];
    for (const target of targets) expect(paths).toContain(target.replace(/^\.\//, ''));
  });

  it("runs the README's first example and loads every entry point from the installed package", async () => {
    const loadEntryPoints = Object.entries(ENTRY_POINTS).map(
      ([entry, name]) => `console.log('${entry}', typeof (await import('${entry}')).${name});`,
    );
    writeFileSync(
      join(project, 'example.mjs'),
      [
        readmeExample('## An agent in twenty lines'),
        'console.log(JSON.stringify({ stopReason: result.stopReason, text: result.text }));',
        ...loadEntryPoints,
        "console.log(import.meta.resolve('troupe'));",
        // The Restate dev server's binary is troupe's dev dependency, absent here: the error says what to install.
        "await (await import('troupe/restate/dev')).startRestateDevServer().catch((error) => console.log(error.message));",
      ].join('\n'),
    );
    const lines = (await sh(process.execPath, ['example.mjs'], project)).trim().split('\n');
    expect(JSON.parse(lines[0] as string)).toEqual({ stopReason: 'completed', text: 'Go to Lisbon.' });
    expect(lines.slice(1, -2)).toEqual(Object.keys(ENTRY_POINTS).map((entry) => `${entry} function`));
    // Resolved inside the project's node_modules, not through this checkout.
    expect(lines.at(-2)).toBe(`file://${join(project, 'node_modules/troupe/dist/src/index.js')}`);
    expect(lines.at(-1)).toBe(
      'startRestateDevServer runs the restate-server binary: npm install --save-dev @restatedev/restate-server@1.7',
    );
  }, 60_000);

  // How a Node program resolves packages, and how a bundler-based app (Vite, Next.js) does.
  it.each([
    { module: 'nodenext', moduleResolution: 'nodenext' },
    { module: 'esnext', moduleResolution: 'bundler' },
  ])(
    "type-checks the README's first example against the package's declarations ($moduleResolution)",
    async ({ module, moduleResolution }) => {
      const imports = Object.keys(ENTRY_POINTS).map((entry, i) => `import * as entry${i} from '${entry}';`);
      const file = `example-${moduleResolution}.ts`;
      writeFileSync(
        join(project, file),
        `${imports.join('\n')}
${readmeExample('## An agent in twenty lines')}
export const entries = [${imports.map((_, i) => `entry${i}`).join(', ')}];
// Fails if the package's types did not resolve (everything would be \`any\`).
// @ts-expect-error a turn's result has no such field
result.notAField;
`,
      );
      const config = `tsconfig-${moduleResolution}.json`;
      writeFileSync(
        join(project, config),
        JSON.stringify({
          compilerOptions: {
            module,
            moduleResolution,
            target: 'es2022',
            strict: true,
            noEmit: true,
            skipLibCheck: true,
            types: ['node'],
            // A user's project has its own @types/node; this one borrows the checkout's.
            typeRoots: [join(REPO, 'node_modules/@types')],
          },
          files: [file],
        }),
      );
      const tsc = createRequire(join(REPO, 'package.json')).resolve('typescript/bin/tsc');
      await expect(sh(process.execPath, [tsc, '-p', join(project, config)], project)).resolves.toBe('');
    },
    120_000,
  );

  it('runs the troupe bin offline on a folder', async () => {
    const folder = await sampleCopy();
    try {
      const bin = join(project, 'node_modules/.bin/troupe');
      const out = await sh(
        bin,
        ['run', '--offline', '--mode', 'bypass', '-C', folder, 'Tell me about this project'],
        project,
      );
      expect(out).toMatch(/^main> Let me look at the folder first\.$/m);
      expect(out).toMatch(/^done: completed/m);
      expect(readFileSync(join(folder, 'TROUPE_NOTES.md'), 'utf8')).toContain('The README is about "Pantry"');
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }, 60_000);

  it('serves the inspector page and every file it loads from the installed package', async () => {
    const child = spawn(join(project, 'node_modules/.bin/troupe'), ['inspect'], {
      cwd: project,
      env: keylessEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const pageUrl = new URL(await printedPageUrl(child));
      const page = await fetch(pageUrl);
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).toBe(readFileSync(join(REPO, 'src/inspect/page/index.html'), 'utf8'));
      const loaded = [...html.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((match) => match[1] as string);
      expect(loaded).toContain('/vendor/elk.bundled.js');
      for (const path of loaded.filter((path) => !PAGE_FILES.includes(path.slice(1)))) {
        const response = await fetch(new URL(path, pageUrl));
        expect(response.status, path).toBe(200);
        expect((await response.text()).length, path).toBeGreaterThan(0);
      }
      // The page's own files, byte for byte (the page imports some of them from others, not from its HTML).
      for (const file of PAGE_FILES.filter((file) => file !== 'index.html')) {
        const response = await fetch(new URL(`/${file}`, pageUrl));
        expect(response.status, file).toBe(200);
        expect(await response.text(), file).toBe(readFileSync(join(REPO, 'src/inspect/page', file), 'utf8'));
      }
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        await exited;
      }
    }
  }, 60_000);
});

/** The page address `troupe inspect` prints on its first line. */
function printedPageUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      err += chunk;
    });
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const url = /open (http:\/\/\S+)/.exec(out)?.[1];
      if (url) resolve(url);
    });
    child.once('exit', (code) => reject(new Error(`troupe inspect exited (${code}):\n${out}\n${err}`)));
  });
}
