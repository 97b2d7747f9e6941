/** MCP tools against a small MCP server written with the SDK: over stdio (a child process) and streamable HTTP (loopback). */
import fs from 'node:fs/promises';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentEvent, createAgent, scriptedModel } from '../../src/index.js';
import {
  connectMcpServers,
  loadMcpConfig,
  McpConnectError,
  type McpConnection,
  mcpToolName,
} from '../../src/mcp/index.js';
import { ToolRegistry } from '../../src/tools/index.js';
import { resultText } from '../agent/helpers.js';
import { ToolDriver, tempDir } from '../builtin/helpers.js';
import { eventually, running } from '../helpers/processes.js';
import { startHttpServer } from './server.js';

const SERVER = path.join(import.meta.dirname, 'fixtures/stdio-server.ts');
const stdioServer = (log?: string, env?: Record<string, string>) => ({
  command: process.execPath,
  args: ['--import', 'tsx', SERVER, ...(log ? [log] : [])],
  ...(env ? { env } : {}),
});

let dir: string;
let log: string;
let mcp: McpConnection;
let driver: ToolDriver;

beforeAll(async () => {
  dir = await tempDir('troupe-mcp-');
  log = path.join(dir, 'server.log');
  mcp = await connectMcpServers({ servers: { test: stdioServer(log) }, inactivityTimeoutMs: 400, killGraceMs: 200 });
  driver = new ToolDriver(mcp, 'mcp-driver');
}, 60_000);

afterAll(async () => {
  await driver.close();
  await fs.rm(dir, { recursive: true, force: true });
});

describe('MCP over stdio', () => {
  it('names each tool mcp__<server>__<tool> and carries its hints', () => {
    expect(mcp.tools.map((t) => t.name).sort()).toEqual(
      ['add', 'echo', 'fail', 'hang', 'pids', 'slow'].map((t) => `mcp__test__${t}`),
    );
    const echo = mcp.tools.find((t) => t.name === 'mcp__test__echo');
    expect(echo?.readOnly).toBe(true);
    expect(echo?.description).toBe('Echoes its text');
    expect(mcp.tools.find((t) => t.name === 'mcp__test__fail')?.destructive).toBe(true);
    expect(mcp.servers).toEqual([{ name: 'test', tools: expect.arrayContaining(['echo', 'slow']) }]);
  });

  it('labels a tool with its title, and events carry the label', async () => {
    expect(mcp.tools.find((t) => t.name === 'mcp__test__echo')?.label).toBe('Echo text');
    expect(mcp.tools.find((t) => t.name === 'mcp__test__add')?.label).toBeUndefined();
    const starts: AgentEvent[] = [];
    const off = driver.agent.on('tool_execution_start', (e) => starts.push(e));
    await driver.ok('mcp__test__echo', { text: 'x' });
    off();
    expect(starts).toMatchObject([{ toolName: 'mcp__test__echo', label: 'Echo text' }]);
  });

  it('calls a tool through an agent', async () => {
    expect(await driver.ok('mcp__test__echo', { text: 'hi' })).toBe('echo: hi');
    const added = await driver.call('mcp__test__add', { a: 2, b: 3 });
    expect(resultText(added)).toBe('5');
    expect(added.details).toEqual({ sum: 5 });
  });

  it('validates arguments against the JSON Schema before the server sees them', async () => {
    expect(await driver.refused('mcp__test__add', { a: 2, b: 1.5 })).toMatch(
      /^Invalid arguments for mcp__test__add:\n- b:/,
    );
    expect(await driver.refused('mcp__test__echo', {})).toMatch(/- text:/);
  });

  it("passes the server's error results on as errors", async () => {
    expect(await driver.refused('mcp__test__fail', {})).toBe('it broke');
  });

  it('lets a call that reports progress run past the inactivity timeout, and reports the progress', async () => {
    const updates: AgentEvent[] = [];
    const off = driver.agent.on('tool_execution_update', (e) => updates.push(e));
    // 8 × 100 ms = 800 ms in all, never 400 ms without a word.
    expect(await driver.ok('mcp__test__slow', { steps: 8, ms: 100 })).toBe('finished 8 steps');
    off();
    // The last notification may arrive after the result, when the call is closed: the first three always count.
    expect(updates.map((e) => (e.type === 'tool_execution_update' ? e.partial : null)).slice(0, 3)).toEqual([
      { progress: 1, total: 8 },
      { progress: 2, total: 8 },
      { progress: 3, total: 8 },
    ]);
  });

  it('cancels a call after the inactivity timeout, and the server is told', async () => {
    await fs.writeFile(log, '');
    expect(await driver.refused('mcp__test__hang', {})).toBe(
      'MCP server "test" sent nothing for 400 ms: the call was cancelled',
    );
    expect(await eventually(async () => (await fs.readFile(log, 'utf8')).includes('cancelled'))).toBe(true);
  });

  it("honours the call's abort signal: an interrupt cancels the call on the server", async () => {
    const patient = await connectMcpServers({ servers: { test: stdioServer(log) }, inactivityTimeoutMs: 60_000 });
    const agent = createAgent({
      model: scriptedModel([{ toolCalls: [{ name: 'mcp__test__hang', args: {} }] }, { text: 'x' }]),
      tools: patient.tools,
    });
    try {
      await fs.writeFile(log, '');
      const turn = agent.prompt('hang');
      // The server has the call: an abort before the request is sent would never reach it.
      expect(await eventually(async () => (await fs.readFile(log, 'utf8')).includes('started'))).toBe(true);
      agent.interrupt();
      expect((await turn).stopReason).toBe('interrupted');
      expect(await eventually(async () => (await fs.readFile(log, 'utf8')).includes('cancelled'))).toBe(true);
    } finally {
      await agent.stop();
      await patient.close();
    }
  }, 60_000);

  it('leaves no server process behind, even a child that ignores SIGTERM', async () => {
    const own = await connectMcpServers({ servers: { test: stdioServer() }, killGraceMs: 200 });
    const pids = JSON.parse(await new ToolDriver(own, 'pids').ok('mcp__test__pids', {})) as {
      server: number;
      helper: number;
    };
    expect(running(pids.server)).toBe(true);
    expect(running(pids.helper)).toBe(true);
    await own.close();
    expect(running(pids.server)).toBe(false);
    expect(await eventually(() => !running(pids.helper))).toBe(true);
  }, 60_000);

  it('says which server failed to start and what it wrote to stderr', async () => {
    await expect(
      connectMcpServers({ servers: { broken: stdioServer(undefined, { FAIL_AT_START: '1' }) } }),
    ).rejects.toThrow(/^MCP server "broken" could not be used: .*\(stderr: cannot start: missing configuration\)$/);
    await expect(connectMcpServers({ servers: { nowhere: { command: '/nonexistent/server' } } })).rejects.toThrow(
      McpConnectError,
    );
  }, 60_000);
});

describe('MCP over streamable HTTP', () => {
  it('connects with headers, lists and calls tools', async () => {
    const http = await startHttpServer();
    const remote = await connectMcpServers({
      servers: { web: { url: http.url, headers: { authorization: 'Bearer test-token' } } },
    });
    const web = new ToolDriver(remote, 'web-driver');
    try {
      expect(remote.tools.map((t) => t.name)).toContain('mcp__web__echo');
      expect(await web.ok('mcp__web__echo', { text: 'over http' })).toBe('echo: over http');
    } finally {
      await web.close();
      await http.close();
    }
  }, 30_000);

  it('gives the model the JSON Schema the server wrote, not a round trip through zod', async () => {
    const http = await startHttpServer();
    const headers = { authorization: 'Bearer test-token' };
    const remote = await connectMcpServers({ servers: { web: { url: http.url, headers } } });
    const raw = new Client({ name: 'raw', version: '1' });
    try {
      await raw.connect(new StreamableHTTPClientTransport(new URL(http.url), { requestInit: { headers } }));
      const written: Record<string, unknown> =
        (await raw.listTools()).tools.find((t) => t.name === 'add')?.inputSchema ?? {};
      const { $schema: _dialect, ...asWritten } = written;
      const spec = new ToolRegistry(remote.tools).specs.find((s) => s.name === 'mcp__web__add');
      expect(spec?.inputSchema).toEqual(asWritten);
      expect(spec?.inputSchema).toMatchObject({ properties: { b: { type: 'integer' } }, required: ['a', 'b'] });
    } finally {
      await raw.close();
      await remote.close();
      await http.close();
    }
  }, 30_000);

  it('refuses a server that turns the client away', async () => {
    const http = await startHttpServer();
    try {
      await expect(connectMcpServers({ servers: { web: { url: http.url } } })).rejects.toThrow(
        /^MCP server "web" could not be used: .*unauthorized/,
      );
    } finally {
      await http.close();
    }
  }, 30_000);
});

describe('configuration', () => {
  it('reads .mcp.json with environment variables expanded', async () => {
    const variable = (name: string) => `$${'{'}${name}}`;
    const file = path.join(dir, '.mcp.json');
    await fs.writeFile(
      file,
      JSON.stringify({
        mcpServers: {
          files: { command: 'npx', args: ['-y', 'a-server'], env: { ROOT: variable('HOME_DIR') } },
          docs: {
            type: 'http',
            url: 'http://127.0.0.1:9/mcp',
            headers: { authorization: `Bearer ${variable('TOKEN')}` },
          },
        },
      }),
    );
    expect(await loadMcpConfig(file, { HOME_DIR: '/home/me', TOKEN: 't0k' })).toEqual({
      files: { command: 'npx', args: ['-y', 'a-server'], env: { ROOT: '/home/me' } },
      docs: { url: 'http://127.0.0.1:9/mcp', headers: { authorization: 'Bearer t0k' } },
    });
  });

  it('says what is wrong with a config file in one line', async () => {
    const file = path.join(dir, 'bad.json');
    await expect(loadMcpConfig(path.join(dir, 'missing.json'))).rejects.toThrow(/^MCP config not found: /);
    await fs.writeFile(file, '{ nope');
    await expect(loadMcpConfig(file)).rejects.toThrow(/is not JSON/);
    await fs.writeFile(file, JSON.stringify({ mcpServers: { x: { args: [] } } }));
    await expect(loadMcpConfig(file)).rejects.toThrow(/bad.json: mcpServers.x: /);
  });

  it('keeps tool names inside what providers accept', () => {
    expect(mcpToolName('my.server', 'do/it')).toBe('mcp__my_server__do_it');
    expect(mcpToolName('s', 'x'.repeat(100))).toHaveLength(64);
  });
});
