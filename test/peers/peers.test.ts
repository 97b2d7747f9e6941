/**
 * The heavy SDKs are optional peer dependencies: importing the entries a plain program uses resolves none of them,
 * and each feature that needs one, used without it, fails with a MissingPeerError naming the package and the
 * install line. "Without it" is made real in a child process whose resolve hooks (fixtures/hooks.mjs) send the
 * package's specifiers to a folder with no node_modules, so the error seen is Node's own.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const REPO = process.cwd();
const HOOKS = join(REPO, 'test/peers/fixtures/hooks.mjs');
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};
const PEERS = Object.keys(pkg.peerDependencies);
const dir = mkdtempSync(join(tmpdir(), 'troupe-peers-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `source` (an ES module) under the hooks; returns its stdout and every specifier it resolved. */
async function child(source: string, env: { hide?: string[] } = {}): Promise<{ stdout: string; resolved: string[] }> {
  const log = join(dir, `resolved-${Math.random().toString(36).slice(2)}.txt`);
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', '--import', HOOKS, '--input-type=module', '-e', source],
    { cwd: REPO, env: { ...process.env, PEERS_LOG: log, PEERS_HIDE: (env.hide ?? []).join(',') } },
  );
  const resolved = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.slice(line.indexOf(' ') + 1));
  return { stdout, resolved };
}

const src = (path: string) => JSON.stringify(join(REPO, 'src', path));
const namesPeer = (specifier: string) => PEERS.some((name) => specifier === name || specifier.startsWith(`${name}/`));

describe('optional peer dependencies', () => {
  it('are declared as optional peers and kept as exact dev dependencies', () => {
    expect(PEERS.sort()).toEqual([
      '@ai-sdk/provider', // types only: aiSdkModel() takes a model the caller built with it
      '@anthropic-ai/sdk',
      '@modelcontextprotocol/sdk',
      '@opentelemetry/api',
      '@restatedev/restate-sdk',
      '@statelyai/inspect',
      'better-sqlite3',
      'elkjs',
      'openai',
    ]);
    for (const name of PEERS) {
      expect(pkg.dependencies[name], name).toBeUndefined();
      expect(pkg.peerDependenciesMeta[name]?.optional, name).toBe(true);
      expect(pkg.peerDependencies[name], name).toBe(`^${pkg.devDependencies[name]}`);
    }
  });

  it('are never resolved by importing troupe, troupe/testing, troupe/tools or troupe/mcp', async () => {
    const { stdout, resolved } = await child(`
      const root = await import(${src('index.ts')});
      const testing = await import(${src('testing/index.ts')});
      const tools = await import(${src('tools/builtin/index.ts')});
      const mcp = await import(${src('mcp/index.ts')});
      console.log(typeof root.createAgent, typeof testing.createRunRecorder, typeof tools.createWorkspaceTools, typeof mcp.connectMcpServers);`);
    expect(stdout.trim()).toBe('function function function function');
    // The log saw the imports (so it would have seen a peer), and no peer among them.
    expect(resolved).toContain('xstate');
    expect(resolved.filter(namesPeer)).toEqual([]);
  }, 120_000);

  it('leave `ws` unloaded by importing troupe until an inspector is started', async () => {
    // `ws` is a dependency, not a peer, but it is 6 MB of RSS that a program without the inspector never needs.
    const { stdout, resolved } = await child(`
      const root = await import(${src('index.ts')});
      const before = process.env.PEERS_LOG;
      const { readFileSync } = await import('node:fs');
      const seen = () => readFileSync(before, 'utf8').split('\\n').some((line) => line.endsWith(' ws'));
      const loadedAtImport = seen();
      const server = await root.startInspectorServer({ port: 0 });
      await server.close();
      console.log(loadedAtImport, seen());`);
    expect(stdout.trim()).toBe('false true');
    expect(resolved).toContain('ws');
  }, 120_000);

  it('leave re2js and croner unloaded by importing troupe until a pattern or a schedule needs them', async () => {
    // Both are dependencies that most programs never use (linear-time patterns, cron schedules): loaded on first use.
    const { stdout, resolved } = await child(`
      const root = await import(${src('index.ts')});
      const { readFileSync } = await import('node:fs');
      const seen = (name) => readFileSync(process.env.PEERS_LOG, 'utf8').split('\\n').some((line) => line.endsWith(' ' + name));
      const atImport = [seen('re2js'), seen('croner')];
      root.jsonSchema({ type: 'object', properties: { id: { type: 'string', pattern: '^a+$' } } });
      const agent = root.createAgent({ model: root.scriptedModel([]) });
      agent.schedule('0 0 1 1 *', 'happy new year').stop();
      console.log(...atImport, seen('re2js'), seen('croner'));`);
    expect(stdout.trim()).toBe('false false true true');
    expect(resolved).toContain('xstate');
  }, 120_000);

  it('run nothing on importing troupe: the kept specimens are taken by the first agent', async () => {
    // The step's specimens keep a Node timer (unref'd): counted by wrapping setInterval before the import.
    const { stdout } = await child(`
      let timers = 0;
      const setIntervalOf = globalThis.setInterval;
      globalThis.setInterval = (...args) => (timers++, setIntervalOf(...args));
      const root = await import(${src('index.ts')});
      await new Promise((resolve) => setTimeout(resolve, 20));
      const atImport = timers;
      const agent = root.createAgent({ model: root.scriptedModel([{ text: 'hi' }]) });
      await agent.prompt('hello');
      console.log(atImport, timers > 0);`);
    expect(stdout.trim()).toBe('0 true');
  }, 120_000);

  it('fail each feature that needs one with a MissingPeerError naming the package and the install line', async () => {
    const { stdout } = await child(
      `
      const { MissingPeerError, SqliteStore, anthropic, openWebSocketInspector, openai, startInspectorServer, traceAgents } =
        await import(${src('index.ts')});
      const report = async (feature, use) => {
        try {
          await use();
          console.log(JSON.stringify({ feature, error: null }));
        } catch (error) {
          const { name, code, message } = error;
          console.log(JSON.stringify({ feature, typed: error instanceof MissingPeerError, name, code, package: error.package, message }));
        }
      };
      await report('sqlite', () => new SqliteStore(${JSON.stringify(join(dir, 'sessions.db'))}));
      await report('otel', () => traceAgents({ on: () => () => {} }));
      await report('stately', () => openWebSocketInspector({ url: 'ws://127.0.0.1:9/' }));
      await report('openai', () => openai({ apiKey: 'sk-test' }));
      await report('anthropic', () => anthropic({ apiKey: 'sk-test' }));
      const { connectMcpServers } = await import(${src('mcp/index.ts')});
      await report('mcp', () => connectMcpServers({ servers: { local: { url: 'http://127.0.0.1:9/mcp' } } }));
      await report('restate', () => import(${src('restate/index.ts')}));
      const server = await startInspectorServer();
      const page = await fetch(new URL('/vendor/elk.bundled.js', server.pageUrl));
      console.log(JSON.stringify({ feature: 'elk', status: page.status, body: (await page.text()).trim() }));
      await server.close();`,
      { hide: PEERS },
    );
    const results = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const typed = (feature: string, name: string, message: string) => ({
      feature,
      typed: true,
      name: 'MissingPeerError',
      code: 'missing_peer',
      package: name,
      message,
    });
    expect(results).toEqual([
      typed('sqlite', 'better-sqlite3', 'SqliteStore needs better-sqlite3: npm install better-sqlite3@12'),
      typed('otel', '@opentelemetry/api', 'traceAgents() needs @opentelemetry/api: npm install @opentelemetry/api@1'),
      typed(
        'stately',
        '@statelyai/inspect',
        'openWebSocketInspector() needs @statelyai/inspect: npm install @statelyai/inspect@0.7',
      ),
      typed('openai', 'openai', 'openai() needs openai: npm install openai@6'),
      typed('anthropic', '@anthropic-ai/sdk', 'anthropic() needs @anthropic-ai/sdk: npm install @anthropic-ai/sdk@1'),
      typed(
        'mcp',
        '@modelcontextprotocol/sdk',
        'connectMcpServers() needs @modelcontextprotocol/sdk: npm install @modelcontextprotocol/sdk@1',
      ),
      typed(
        'restate',
        '@restatedev/restate-sdk',
        'troupe/restate needs @restatedev/restate-sdk: npm install @restatedev/restate-sdk@1',
      ),
      {
        feature: 'elk',
        status: 500,
        body: "The inspector page's graph layout needs elkjs: npm install elkjs@0.12",
      },
    ]);
    // Every optional peer is above (a new one fails here until its error is tested), but @ai-sdk/provider, which the
    // package only ever imports as types.
    const tested = results.map((result) => (result.feature === 'elk' ? 'elkjs' : result.package));
    expect([...tested, '@ai-sdk/provider'].sort()).toEqual([...PEERS].sort());
  }, 120_000);

  it("leave a broken peer's own error alone: a dependency missing inside the peer is not the peer missing", async () => {
    const { stdout } = await child(
      `
      const { MissingPeerError, openWebSocketInspector } = await import(${src('index.ts')});
      try {
        await openWebSocketInspector({ url: 'ws://127.0.0.1:9/' });
      } catch (error) {
        console.log(JSON.stringify({ typed: error instanceof MissingPeerError, code: error.code, message: error.message }));
      }`,
      { hide: ['superjson'] },
    );
    const result = JSON.parse(stdout) as { typed: boolean; code: string; message: string };
    expect(result.typed).toBe(false);
    expect(result.code).toBe('ERR_MODULE_NOT_FOUND');
    expect(result.message).toMatch(/^Cannot find package 'superjson'/);
  }, 120_000);
});
