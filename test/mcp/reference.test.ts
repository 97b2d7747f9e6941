/**
 * The reference MCP servers (`@modelcontextprotocol/server-everything` and `server-filesystem`, dev dependencies)
 * through `connectMcpServers` and `troupe run --mcp-config`: every tool listed and usable by an agent, text,
 * numbers, files, an image, progress, and an environment that shows none of this process's secrets.
 */

import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/index.js';
import { connectMcpServers, type McpConnection } from '../../src/mcp/index.js';
import { ToolDriver, tempDir, writeTree } from '../builtin/helpers.js';
import { keylessEnv, runPiped } from '../cli/helpers.js';
import { PLANTED, plantInEnvironment } from '../helpers/secrets.js';

const require = createRequire(import.meta.url);
const bin = (manifest: string) => path.join(path.dirname(manifest), 'dist/index.js');
const EVERYTHING = bin(require.resolve('@modelcontextprotocol/server-everything/package.json'));
const FILESYSTEM = bin(require.resolve('@modelcontextprotocol/server-filesystem/package.json'));

const unplant = plantInEnvironment();

let dir: string;
let mcp: McpConnection;
let driver: ToolDriver;

beforeAll(async () => {
  dir = await tempDir('troupe-mcp-reference-');
  await writeTree(dir, { 'notes.md': '# Notes\nthe reference server read this\n', 'sub/data.txt': 'data\n' });
  mcp = await connectMcpServers({
    servers: {
      everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] },
      files: { command: process.execPath, args: [FILESYSTEM, dir] },
    },
  });
  driver = new ToolDriver(mcp, 'reference');
}, 60_000);

afterAll(async () => {
  await driver.close();
  await fs.rm(dir, { recursive: true, force: true });
  unplant();
});

describe('server-everything', () => {
  it('lists every tool, each one an agent tool', () => {
    const listed = mcp.servers.find((s) => s.name === 'everything')?.tools ?? [];
    expect(listed).toEqual(
      expect.arrayContaining(['echo', 'get-sum', 'get-env', 'get-tiny-image', 'trigger-long-running-operation']),
    );
    const files = mcp.servers.find((s) => s.name === 'files')?.tools ?? [];
    expect(files).toEqual(expect.arrayContaining(['read_text_file', 'list_directory']));
    expect(mcp.tools.map((t) => t.name).sort()).toEqual(
      mcp.servers.flatMap((s) => s.tools.map((t) => `mcp__${s.name}__${t}`)).sort(),
    );
    expect(mcp.warnings).toEqual([]);
  });

  it('echoes and sums', async () => {
    expect(await driver.ok('mcp__everything__echo', { message: 'hello there' })).toBe('Echo: hello there');
    expect(await driver.ok('mcp__everything__get-sum', { a: 2, b: 40 })).toMatch(/\b42\b/);
  });

  it('sends an image as an image part', async () => {
    const result = await driver.call('mcp__everything__get-tiny-image', {});
    const image = result.content.find((part) => part.type === 'image');
    expect(image).toMatchObject({ type: 'image', source: { kind: 'base64', mediaType: 'image/png' } });
    expect(image?.type === 'image' && image.source.kind === 'base64' && image.source.data.length).toBeGreaterThan(100);
  });

  it('reports the progress of a long-running operation', async () => {
    const updates: AgentEvent[] = [];
    const off = driver.agent.on('tool_execution_update', (event) => updates.push(event));
    const result = await driver.call('mcp__everything__trigger-long-running-operation', { duration: 0.3, steps: 3 });
    off();
    expect(result.isError).toBe(false);
    // The last step's notice may come after the answer, when the call is over: the ones before it show.
    const partials = updates.map((u) => (u.type === 'tool_execution_update' ? u.partial : undefined));
    expect(partials.slice(0, 2)).toEqual([
      expect.objectContaining({ progress: 1, total: 3 }),
      expect.objectContaining({ progress: 2, total: 3 }),
    ]);
  });

  it("shows no secret in the server's environment", async () => {
    const env = await driver.ok('mcp__everything__get-env', {});
    expect(env).toContain('PATH');
    for (const [name, value] of Object.entries(PLANTED)) {
      expect(env).not.toContain(name);
      expect(env).not.toContain(value);
    }
  });
});

describe('server-filesystem', () => {
  it('reads a file and lists a folder', async () => {
    const text = await driver.ok('mcp__files__read_text_file', { path: path.join(dir, 'notes.md') });
    expect(text).toContain('the reference server read this');
    const listing = await driver.ok('mcp__files__list_directory', { path: dir });
    expect(listing).toMatch(/\[FILE\] notes\.md/);
    expect(listing).toMatch(/\[DIR\] sub/);
  });
});

describe('troupe run --mcp-config with the reference servers', () => {
  it('calls their tools, and get-env shows none of the keys troupe was started with', async () => {
    const config = path.join(dir, 'mcp.json');
    await fs.writeFile(
      config,
      JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [EVERYTHING, 'stdio'] } } }),
    );
    const run = (task: string) =>
      runPiped(['run', '--offline', '--mode', 'bypass', '-C', dir, '--json', '--mcp-config', config, task], {
        env: keylessEnv(PLANTED),
      });
    const echo = await run('Use `mcp__everything__echo {"message": "from the cli"}`');
    expect(echo.code, echo.stderr).toBe(0);
    expect(echo.stdout).toContain('Echo: from the cli');
    const env = await run('Use `mcp__everything__get-env {}`');
    expect(env.code, env.stderr).toBe(0);
    expect(env.stdout).toContain('PATH');
    for (const [name, value] of Object.entries(PLANTED)) {
      expect(env.stdout + env.stderr).not.toContain(value);
      expect(env.stdout).not.toContain(`\\"${name}\\"`);
    }
  }, 120_000);
});
