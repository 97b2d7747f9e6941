/**
 * MCP servers that misbehave or hold secrets: replies far over the size limit, tool names that collide once made
 * safe, a server's environment, and a server echoing its credentials back.
 */
import fs from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcpServers, type McpConnection } from '../../src/mcp/index.js';
import { resultText } from '../agent/helpers.js';
import { ToolDriver, tempDir } from '../builtin/helpers.js';
import { keylessEnv, runPiped } from '../cli/helpers.js';
import { PLANTED, plantInEnvironment } from '../helpers/secrets.js';

const RAW = path.join(import.meta.dirname, 'fixtures/raw-server.mjs');
const unplant = plantInEnvironment();
/** Named in the server's config: passed to it, and a secret from then on. */
const CONFIG_VALUE = 'config-only-value-7f3a9c';

let mcp: McpConnection;
let driver: ToolDriver;

beforeAll(async () => {
  mcp = await connectMcpServers({
    servers: { raw: { command: process.execPath, args: [RAW], env: { SERVICE_SETTING: CONFIG_VALUE } } },
    inactivityTimeoutMs: 120_000,
  });
  driver = new ToolDriver(mcp, 'mcp-edges');
}, 60_000);

afterAll(async () => {
  await driver.close();
  unplant();
});

describe('a stdio reply over the size limit', () => {
  it.each([10, 50, 200])(
    'of %i MB fails its call and leaves the process and the server working',
    async (mb) => {
      const result = await driver.call('mcp__raw__big', { mb });
      expect(result.isError).toBe(true);
      expect(resultText(result)).toMatch(/its reply was \d+\.\d MB, over the 10 MB a message may have/);
      expect(await driver.ok('mcp__raw__echo', { text: 'still here' })).toBe('echo: still here');
    },
    120_000,
  );

  it('under the limit arrives whole', async () => {
    const result = await driver.call('mcp__raw__big', { mb: 1 });
    expect(result.isError).toBe(false);
    expect(resultText(result)).toMatch(/^a{1000}/);
  }, 60_000);
});

describe('tool names that collide once made safe', () => {
  const names = () => mcp.tools.map((t) => t.name);

  it('are made unique, the name that needed no change kept, and a warning says so', () => {
    expect(new Set(names()).size).toBe(names().length);
    expect(names().every((name) => /^[a-zA-Z0-9_-]{1,64}$/.test(name))).toBe(true);
    expect(names()).toContain('mcp__raw__get_user');
    expect(names().filter((n) => n.startsWith('mcp__raw__get_user'))).toHaveLength(2);
    expect(names().filter((n) => n.startsWith('mcp__raw__lookup_xxx'))).toHaveLength(2);
    expect(mcp.warnings).toHaveLength(2);
    expect(mcp.warnings[0]).toMatch(/"get\.user" \(server raw\) as mcp__raw__get_user_[0-9a-f]{8}/);
  });

  it('each call the tool it names', async () => {
    const dotted = names().find((n) => n.startsWith('mcp__raw__get_user_')) as string;
    expect(await driver.ok(dotted, {})).toBe('called get.user');
    expect(await driver.ok('mcp__raw__get_user', {})).toBe('called get_user');
    const long = mcp.tools.filter((t) => t.name.startsWith('mcp__raw__lookup_'));
    const called = await Promise.all(long.map((t) => driver.ok(t.name, {})));
    expect(called.sort()).toEqual([
      `called lookup_${'x'.repeat(60)}_by_mail`,
      `called lookup_${'x'.repeat(60)}_by_name`,
    ]);
  });

  it('are the same whatever order the servers list them in', async () => {
    const again = await connectMcpServers({
      servers: { raw: { command: process.execPath, args: [RAW] } },
    });
    try {
      expect(again.tools.map((t) => t.name)).toEqual(names());
    } finally {
      await again.close();
    }
  }, 60_000);
});

describe("a stdio server's environment", () => {
  it("holds the SDK's safe set and what the config names, none of this process's secrets", async () => {
    const env = await driver.ok('mcp__raw__env', {});
    expect(env).toMatch(/^PATH=/m);
    for (const value of Object.values(PLANTED)) expect(env).not.toContain(value);
    for (const name of Object.keys(PLANTED)) expect(env).not.toContain(`${name}=`);
    // The config's values reach the server, and come back redacted: they are secrets too.
    expect(env).toContain('SERVICE_SETTING=[redacted]');
    expect(env).not.toContain(CONFIG_VALUE);
  });
});

describe('troupe run --mcp-config', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir('troupe-mcp-cli-');
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('starts with colliding tool names, says how it named them, and calls the dotted one', async () => {
    const config = path.join(dir, 'raw.json');
    await fs.writeFile(config, JSON.stringify({ mcpServers: { raw: { command: process.execPath, args: [RAW] } } }));
    const dotted = mcp.tools.find((t) => t.name.startsWith('mcp__raw__get_user_'))?.name;
    const run = await runPiped(
      ['run', '--offline', '--mode', 'bypass', '-C', dir, '--mcp-config', config, `Use \`${dotted} {}\``],
      {
        env: keylessEnv(),
      },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('were named apart');
    expect(run.stdout).toContain('called get.user');
  }, 120_000);

  it('never prints a header token that the server echoes in its 401 body', async () => {
    const token = 'hdr-token-5e1b7a2c9d';
    const server = createServer((request, response) => {
      response.writeHead(401, { 'content-type': 'text/plain' });
      response.end(`unauthorized: ${request.headers.authorization}`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
      const config = path.join(dir, 'http.json');
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the MCP config's own ${VAR} syntax
      const headers = { Authorization: 'Bearer ${UPSTREAM_HEADER}' };
      await fs.writeFile(config, JSON.stringify({ mcpServers: { docs: { url, headers } } }));
      const run = await runPiped(['run', '--offline', '-C', dir, '--mcp-config', config, 'hello'], {
        env: keylessEnv({ UPSTREAM_HEADER: token }),
      });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('MCP server "docs" could not be used');
      expect(run.stderr).toContain('[redacted]');
      expect(run.stderr + run.stdout).not.toContain(token);
    } finally {
      server.close();
    }
  }, 120_000);
});
