/**
 * The package as a user gets it: `npm pack` (which builds first, through `prepack`), the tarball installed twice
 * into fresh projects without the network, and then run from those installations, never from this checkout. The
 * lean project holds only zod and openai beside troupe: the README's first agent runs on `openai()` against a
 * loopback server speaking OpenAI's wire format, and `troupe run --offline` works. The full project holds every
 * optional peer: each feature's example (examples/*.ts, importing `troupe`) runs and prints what it should.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RestateDevServer, startRestateDevServer } from '../../src/restate/dev-server.js';
import { keylessEnv, REPO, sampleCopy } from '../cli/helpers.js';
import { chatReply } from '../wire/builders.js';
import { WireServer } from '../wire/server.js';
import { install, installExamples, measure, type Packed, pack, pkg, readmeExample, sh } from './install.js';

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
/** What the examples import besides troupe and its peers, as a user's project would list them. */
const EXAMPLE_PACKAGES = ['@opentelemetry/sdk-trace-base'];
const TWENTY_LINES = readmeExample('## An agent in twenty lines');

let work: string;
/** Every optional peer installed: each feature runs. */
let project: string;
/** Only zod and openai beside troupe: what one agent on one provider installs. */
let lean: string;
let packed: Packed;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'troupe-package-'));
  project = join(work, 'consumer');
  mkdirSync(project);
  lean = join(work, 'lean');
  mkdirSync(lean);
  packed = await pack(work);
  const tarball = `file:${join(work, packed.filename)}`;
  await install(project, tarball, packed, [...Object.keys(pkg.peerDependencies), ...EXAMPLE_PACKAGES]);
  installExamples(project);
  await install(lean, tarball, packed, ['openai']);
}, 600_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
}, 120_000);

describe('the lean install: troupe, zod and openai', () => {
  it('holds no other SDK, no native build and no HTTP server framework, in at most 35 MB', () => {
    const { packages, bytes, installScripts } = measure(lean);
    const absent = Object.keys(pkg.peerDependencies).filter((name) => name !== 'openai');
    for (const name of [...absent, 'express', 'hono', 'fastify', 'koa']) expect(packages, name).not.toContain(name);
    expect(packages).toContain('openai');
    expect(installScripts).toEqual([]);
    const mb = bytes / 1024 / 1024;
    console.log(`lean install: ${packages.length} packages, ${mb.toFixed(1)} MB of node_modules, 0 native builds`);
    expect(mb).toBeLessThanOrEqual(35);
  });

  it("runs the README's first agent on openai() against a loopback server speaking OpenAI's wire format", async () => {
    const wire = await WireServer.start();
    try {
      wire.reply(
        '/v1/chat/completions',
        chatReply({ toolCalls: [{ id: 'call_w1', name: 'get_weather', args: '{"city":"Lisbon"}' }] }),
        chatReply({ text: 'Go to Lisbon.', usage: { prompt: 61, completion: 4 } }),
      );
      const program = TWENTY_LINES.replace(
        "import { createAgent, defineTool, scriptedModel } from 'troupe';",
        "import { createAgent, defineTool, openai } from 'troupe';",
      ).replace(
        /^ {2}model: scriptedModel\(.*\),$/m,
        "  model: openai({ model: 'gpt-test-2026', apiKey: 'sk-test', baseURL: process.env.WIRE_BASE_URL }),",
      );
      expect(program).not.toContain('scriptedModel');
      writeFileSync(
        join(lean, 'agent.mjs'),
        [
          program,
          'console.log(JSON.stringify({ stopReason: result.stopReason, text: result.text, usage: result.usage }));',
          "const { SqliteStore } = await import('troupe');",
          "try { new SqliteStore('sessions.db'); } catch (error) { console.log(error.code, error.message); }",
        ].join('\n'),
      );
      const out = await sh(process.execPath, ['agent.mjs'], lean, { WIRE_BASE_URL: wire.baseURL });
      const lines = out.trim().split('\n');
      expect(JSON.parse(lines[0] as string)).toMatchObject({
        stopReason: 'completed',
        text: 'Go to Lisbon.',
        usage: { input: 61, output: 4 },
      });
      expect(lines[1]).toBe('missing_peer SqliteStore needs better-sqlite3: npm install better-sqlite3@12');
      // The installed SDK did the HTTP: the tool went out as a function, its result came back to the model.
      expect(wire.requests.map((request) => request.path)).toEqual(['/v1/chat/completions', '/v1/chat/completions']);
      expect(wire.requests[0]?.headers.authorization).toBe('Bearer sk-test');
      expect(wire.requests[0]?.body.tools[0].function.name).toBe('get_weather');
      expect(wire.requests[1]?.body.messages.at(-1)).toMatchObject({
        role: 'tool',
        tool_call_id: 'call_w1',
        content: 'Sunny in Lisbon',
      });
    } finally {
      await wire.close();
    }
  }, 60_000);

  it('runs the troupe bin offline on a folder', async () => {
    const folder = await sampleCopy();
    try {
      const bin = join(lean, 'node_modules/.bin/troupe');
      const out = await sh(
        bin,
        ['run', '--offline', '--mode', 'bypass', '-C', folder, 'Tell me about this project'],
        lean,
      );
      expect(out).toMatch(/^main> Let me look at the folder first\.$/m);
      expect(out).toMatch(/^done: completed/m);
      expect(readFileSync(join(folder, 'TROUPE_NOTES.md'), 'utf8')).toContain('The README is about "Pantry"');
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the full install: every optional peer', () => {
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
        TWENTY_LINES,
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
${TWENTY_LINES}
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

describe("each feature's example, run from the full install", () => {
  const example = (name: string, args: string[] = [], env: Record<string, string> = {}) =>
    sh(process.execPath, [`examples/${name}.js`, ...args], project, env).then((out) => out.trimEnd().split('\n'));

  it('keeps sessions in SQLite (better-sqlite3)', async () => {
    expect(await example('sqlite-session', [join(work, 'sessions.db')])).toEqual([
      'first process: Noted.',
      'reopened with 2 messages: Earlier you said: "My name is Ada."',
      "[ 'a name to remember: idle' ]",
    ]);
  }, 60_000);

  it("calls an MCP server's tool over stdio (@modelcontextprotocol/sdk)", async () => {
    expect(await example('mcp')).toEqual([
      'tools: mcp__units__km_to_miles (read-only)',
      'A marathon is 42.195 km = 26.2 miles.',
    ]);
  }, 60_000);

  it('traces an agent with OpenTelemetry into an in-memory exporter (@opentelemetry/api)', async () => {
    expect(await example('tracing')).toEqual([
      'invoke_agent planner',
      '  turn (12 output tokens)',
      '    step',
      '      chat scripted (8 output tokens)',
      '      execute_tool get_weather',
      '    step',
      '      chat scripted (4 output tokens)',
      'answer: Go to Lisbon.',
    ]);
  }, 60_000);

  it("streams an agent's statechart frames to the inspector (@statelyai/inspect, elkjs)", async () => {
    const lines = await example('inspect');
    expect(lines[0]).toMatch(/^page: http:\/\/127\.0\.0\.1:\d+\/\?token=\S+$/);
    expect(lines.slice(1)).toEqual([
      'answer: Go to Lisbon.',
      'runs: example',
      'frames of run "example": @troupe.transitions, @xstate.actor, @xstate.event, @xstate.snapshot',
    ]);
  }, 60_000);

  // The restate-server binary is a dev dependency of this checkout, not of the project: the example is given a
  // server as its comment says (RESTATE_INGRESS / RESTATE_ADMIN), and registers and drives the project's worker.
  it('hosts agents on Restate (@restatedev/restate-sdk) and drives them over its ingress', async () => {
    let server: RestateDevServer | undefined;
    try {
      server = await startRestateDevServer();
      const lines = await example('restate', [], {
        RESTATE_INGRESS: server.ingressUrl,
        RESTATE_ADMIN: server.adminUrl,
      });
      const said = lines.filter((line) => !line.startsWith('  ['));
      expect(said[0]).toMatch(/^registered http:\/\/\S+ with the admin API at http:\/\/127\.0\.0\.1:\d+$/);
      const id = /^(coordinator-\w+): /.exec(said[1] ?? '')?.[1];
      expect(said[1]).toBe(`${id}: Two researchers are on it; their results will come as notifications.`);
      // Each subagent's result reached the coordinator as a notification; in which order is the swarm's business.
      const notified = said.slice(2, 4).map((line) => /status="completed">(.*)<\/notification>$/.exec(line)?.[1]);
      expect(notified.sort()).toEqual(['Found it: Lisbon: 600000 inhabitants', 'Found it: Oslo: 400000 inhabitants']);
      expect(said[4]).toMatch(new RegExp(`^usage of ${id}: \\{"input":\\d+,"output":\\d+,`));
      expect(said[5]).toMatch(/^watch it: curl /);
      expect(lines).toContain(`  [${id}/t0.research_0] look_up done`);
      expect(lines).toContain(`  [${id}/t0.research_1] look_up done`);
    } finally {
      await server?.stop();
    }
  }, 180_000);
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
