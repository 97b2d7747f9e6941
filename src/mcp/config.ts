/**
 * MCP servers from a JSON file, in the layout other tools use (`.mcp.json`):
 * `{ "mcpServers": { "files": { "command": "npx", "args": ["-y", "some-server"] }, "docs": { "url": "https://…" } } }`.
 * `${NAME}` in a string is replaced by the environment variable NAME, so tokens stay out of the file; every value
 * so expanded is a secret from then on (cut out of every tool result, error and frame), like every header and
 * environment value of a server (see `connectMcpServers`).
 */
import fs from 'node:fs/promises';
import { z } from 'zod';
import { registerSecret } from '../protocol/index.js';
import type { McpServerConfig } from './client.js';

const stdio = z.object({
  type: z.literal('stdio').optional(),
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().optional(),
});
const http = z.object({
  type: z.enum(['http', 'streamable-http']).optional(),
  url: z.url(),
  headers: z.record(z.string(), z.string()).optional(),
});
const file = z.object({ mcpServers: z.record(z.string().regex(/^[a-zA-Z0-9_-]+$/), z.union([stdio, http])) });

function expand(value: unknown, env: NodeJS.ProcessEnv): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name) => {
      registerSecret(env[name]);
      return env[name] ?? '';
    });
  }
  if (Array.isArray(value)) return value.map((v) => expand(v, env));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expand(v, env)]));
  }
  return value;
}

/** Reads and checks a config file; every problem is one line naming the file. */
export async function loadMcpConfig(
  path: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Record<string, McpServerConfig>> {
  let text: string;
  try {
    text = await fs.readFile(path, 'utf8');
  } catch {
    throw new Error(`MCP config not found: ${path}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`MCP config ${path} is not JSON: ${(error as Error).message}`);
  }
  const parsed = file.safeParse(expand(json, env));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`MCP config ${path}: ${issue?.path.join('.') || '(file)'}: ${issue?.message}`);
  }
  const servers: Record<string, McpServerConfig> = {};
  for (const [name, entry] of Object.entries(parsed.data.mcpServers)) {
    const { type: _type, ...config } = entry;
    servers[name] = config as McpServerConfig;
  }
  return servers;
}
