/**
 * Tools from Model Context Protocol servers, through the official SDK's client: each server's tools become Troupe
 * tools named `mcp__<server>__<tool>`, validated against their JSON Schema before they are sent, with an inactivity
 * timeout and the call's abort signal passed to the server as a cancellation.
 */
import { createHash } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import { type JsonValue, redactSecrets, registerSecret, type ToolResultContent } from '../protocol/index.js';
import { loadPeer } from '../protocol/peers.js';
import { type AnyTool, defineTool, type ToolOutput } from '../tools/define-tool.js';
import { jsonSchema } from '../tools/json-schema.js';
import { GroupStdioTransport, type StdioCodec, type StdioServer } from './stdio-transport.js';

/** An MCP server reached over streamable HTTP at a URL, with the headers it needs (an authorisation token). */
export interface HttpServer {
  /** A streamable HTTP endpoint, e.g. `http://127.0.0.1:3000/mcp`. */
  url: string;
  headers?: Record<string, string>;
}

/** How to reach one MCP server: a command to start (stdio) or a URL (HTTP). */
export type McpServerConfig = StdioServer | HttpServer;

/** What `connectMcpServers` takes: the servers by name, and how long a call may stay silent before it fails. */
export interface McpOptions {
  servers: Record<string, McpServerConfig>;
  /**
   * A call fails when its server has sent nothing (no result, no progress) for this long. Default 60 s. Progress
   * notifications restart the clock, so a long call that reports progress is never cut.
   */
  inactivityTimeoutMs?: number;
  /** Connecting and listing a server's tools. Default 30 s. */
  connectTimeoutMs?: number;
  /** Between SIGTERM and SIGKILL for stdio servers. Default 2 s. */
  killGraceMs?: number;
  /** The longest message a stdio server may send; a longer reply fails its call. Default 10 MB. */
  maxMessageBytes?: number;
}

/**
 * The connected servers' tools, ready for an agent's `tools`, with what they are and a `close()` that stops the
 * servers.
 */
export interface McpConnection {
  tools: AnyTool[];
  /** The servers' own names and tool names, for listings. */
  servers: Array<{ name: string; tools: string[] }>;
  /** What a user should know: tools renamed because their names collided once made safe for a model. */
  warnings: string[];
  /** Disconnects every server; stdio servers are stopped with every process they started. */
  close(): Promise<void>;
}

/** A server that cannot be used, with its name and, for stdio, what it wrote to stderr. */
export class McpConnectError extends Error {
  override readonly name = 'McpConnectError';
}

const NAME_PART = /[^a-zA-Z0-9_-]/g;

/** `mcp__<server>__<tool>` within the 64 characters providers allow. */
export function mcpToolName(server: string, tool: string): string {
  const name = `mcp__${server.replace(NAME_PART, '_')}__${tool.replace(NAME_PART, '_')}`;
  return name.length <= 64 ? name : name.slice(0, 64);
}

/**
 * The names of every tool of every server, unique. Two tools whose names become the same once made safe
 * (`get.user` and `get_user`, or two names alike in their first 64 characters) are told apart by a short hash of
 * their server and own name, except one whose name needed no change, which keeps it. The same servers and tools
 * give the same names whatever order they are listed in, so a session's history keeps meaning the same tools.
 */
function uniqueNames(tools: ReadonlyArray<{ server: string; tool: string }>, warnings: string[]): string[] {
  const names = tools.map(({ server, tool }) => mcpToolName(server, tool));
  const byName = new Map<string, number[]>();
  for (const [i, name] of names.entries()) byName.set(name, [...(byName.get(name) ?? []), i]);
  const taken = new Set(names);
  for (const [name, indexes] of byName) {
    if (indexes.length < 2) continue;
    const keeper = indexes.find((i) => `mcp__${tools[i]?.server}__${tools[i]?.tool}` === name);
    for (const i of indexes) {
      if (i === keeper) continue;
      const { server, tool } = tools[i] as { server: string; tool: string };
      const hash = createHash('sha256').update(`${server}\0${tool}`).digest('hex');
      let renamed = `${name.slice(0, 55)}_${hash.slice(0, 8)}`;
      for (let n = 2; taken.has(renamed); n++) renamed = `${name.slice(0, 52)}_${hash.slice(0, 8)}_${n}`;
      taken.add(renamed);
      names[i] = renamed;
    }
    const listed = indexes.map((i) => `"${tools[i]?.tool}" (server ${tools[i]?.server}) as ${names[i]}`);
    warnings.push(`MCP tools whose names collide as ${name} were named apart: ${listed.join(', ')}`);
  }
  return names;
}

function isHttp(config: McpServerConfig): config is HttpServer {
  return 'url' in config;
}

/**
 * The tool's arguments as a JSON-Schema tool's (the one path for schemas known only at run time): validated before
 * the call, and sent to the model as the server wrote it. A schema zod cannot read accepts any object, and the
 * server judges the arguments itself.
 */
function schemaOf(tool: McpTool): z.ZodObject {
  try {
    return jsonSchema(tool.inputSchema);
  } catch {
    return jsonSchema({ type: 'object', additionalProperties: true });
  }
}

function toOutput(result: CallToolResult): ToolOutput {
  const content: ToolResultContent[] = [];
  for (const part of result.content ?? []) {
    if (part.type === 'text') content.push({ type: 'text', text: part.text });
    else if (part.type === 'image') {
      content.push({ type: 'image', source: { kind: 'base64', mediaType: part.mimeType, data: part.data } });
    } else if (part.type === 'resource' && 'text' in part.resource) {
      content.push({ type: 'text', text: String(part.resource.text) });
    } else if (part.type === 'resource_link') {
      content.push({ type: 'text', text: `[resource ${part.name}: ${part.uri}]` });
    } else {
      content.push({ type: 'text', text: `[${part.type} content]` });
    }
  }
  if (content.length === 0 && result.structuredContent) {
    content.push({ type: 'text', text: JSON.stringify(result.structuredContent) });
  }
  return {
    content,
    isError: result.isError === true,
    ...(result.structuredContent ? { details: result.structuredContent as JsonValue } : {}),
  };
}

async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new McpConnectError(message)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

interface Connected {
  name: string;
  client: Client;
  transport: Transport;
  tools: McpTool[];
}

/** Header and environment values of a server's configuration carry its credentials: they are secrets. */
function registerConfigSecrets(config: McpServerConfig): void {
  const values = isHttp(config) ? config.headers : config.env;
  for (const value of Object.values(values ?? {})) registerSecret(value);
}

interface McpSdk extends StdioCodec {
  Client: typeof Client;
  StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport;
}

/** The SDK is an optional peer, loaded when the first servers are connected. */
function loadSdk(): Promise<McpSdk> {
  return loadPeer('@modelcontextprotocol/sdk', 'connectMcpServers()', async () => {
    const [client, http, stdioClient, stdio] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
      import('@modelcontextprotocol/sdk/client/stdio.js'),
      import('@modelcontextprotocol/sdk/shared/stdio.js'),
    ]);
    return {
      Client: client.Client,
      StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
      getDefaultEnvironment: stdioClient.getDefaultEnvironment,
      deserializeMessage: stdio.deserializeMessage,
      serializeMessage: stdio.serializeMessage,
    };
  });
}

async function connectOne(sdk: McpSdk, name: string, config: McpServerConfig, options: McpOptions): Promise<Connected> {
  registerConfigSecrets(config);
  const transport: Transport = isHttp(config)
    ? new sdk.StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: config.headers ? { headers: config.headers } : {},
      })
    : new GroupStdioTransport(config, sdk, options.killGraceMs, options.maxMessageBytes);
  const client = new sdk.Client({ name: 'troupe', version: '0.1.0' });
  const connectMs = options.connectTimeoutMs ?? 30_000;
  try {
    await withTimeout(
      client.connect(transport),
      connectMs,
      `MCP server "${name}" did not answer within ${connectMs} ms`,
    );
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { timeout: connectMs });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return { name, client, transport, tools };
  } catch (error) {
    await client.close().catch(() => {});
    await transport.close().catch(() => {});
    const stderr = transport instanceof GroupStdioTransport && transport.stderr ? ` (stderr: ${transport.stderr})` : '';
    const reason = error instanceof Error ? error.message : String(error);
    throw new McpConnectError(redactSecrets(`MCP server "${name}" could not be used: ${reason}${stderr}`));
  }
}

function toolFor(server: Connected, tool: McpTool, name: string, inactivityMs: number): AnyTool {
  const annotations = tool.annotations ?? {};
  const title = tool.title ?? annotations.title;
  return defineTool({
    name,
    description: tool.description ?? title ?? `${tool.name} (MCP server ${server.name})`,
    ...(title ? { label: title } : {}),
    schema: schemaOf(tool),
    ...(annotations.readOnlyHint === true ? { readOnly: true } : {}),
    // The MCP default for a tool that is not read-only is "may be destructive".
    ...(annotations.readOnlyHint !== true && annotations.destructiveHint !== false ? { destructive: true } : {}),
    async execute(args, ctx) {
      try {
        const result = await server.client.callTool({ name: tool.name, arguments: args }, undefined, {
          signal: ctx.signal,
          timeout: inactivityMs,
          resetTimeoutOnProgress: true,
          onprogress: (progress) => ctx.update(progress as unknown as JsonValue),
        });
        return toOutput(result as CallToolResult);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (/timed out/i.test(message)) {
          throw new Error(`MCP server "${server.name}" sent nothing for ${inactivityMs} ms: the call was cancelled`);
        }
        throw new Error(`MCP server "${server.name}": ${message}`);
      }
    },
  });
}

/**
 * Connects to every server (in parallel), lists their tools and wraps them. If one server fails, the others are
 * closed and the error names the one that failed.
 */
export async function connectMcpServers(options: McpOptions): Promise<McpConnection> {
  const entries = Object.entries(options.servers);
  const sdk = await loadSdk();
  const settled = await Promise.allSettled(entries.map(([name, config]) => connectOne(sdk, name, config, options)));
  const connected = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const close = async () => {
    await Promise.all(
      connected.map(async (server) => {
        await server.client.close().catch(() => {});
        await server.transport.close().catch(() => {});
      }),
    );
  };
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await close();
    throw failed.reason;
  }
  const inactivityMs = options.inactivityTimeoutMs ?? 60_000;
  const all = connected.flatMap((server) => server.tools.map((tool) => ({ server, tool })));
  const warnings: string[] = [];
  const names = uniqueNames(
    all.map(({ server, tool }) => ({ server: server.name, tool: tool.name })),
    warnings,
  );
  return {
    tools: all.map(({ server, tool }, i) => toolFor(server, tool, names[i] as string, inactivityMs)),
    servers: connected.map((server) => ({ name: server.name, tools: server.tools.map((t) => t.name) })),
    warnings,
    close,
  };
}
