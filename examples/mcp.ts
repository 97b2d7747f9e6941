/**
 * Tools from an MCP server, offline. This file is both sides: run with `serve`, it is a stdio MCP server written with
 * the SDK's own classes, offering one tool; run without, it starts itself as that server, and an agent on the
 * scripted model calls the tool as `mcp__units__km_to_miles`. Needs the optional `@modelcontextprotocol/sdk` package.
 *
 *   npx tsx examples/mcp.ts
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { createAgent, scriptedModel, textOf } from '../src/index.js';
import { connectMcpServers } from '../src/mcp/index.js';

if (process.argv[2] === 'serve') {
  const server = new McpServer({ name: 'units', version: '1.0.0' });
  server.registerTool(
    'km_to_miles',
    {
      description: 'Converts kilometres to miles',
      inputSchema: { km: z.number() },
      annotations: { readOnlyHint: true },
    },
    async ({ km }) => ({ content: [{ type: 'text', text: `${km} km = ${(km * 0.621371).toFixed(1)} miles` }] }),
  );
  await server.connect(new StdioServerTransport());
} else {
  // The server runs as this process does: plain node, or node with tsx's loader (its flags are in execArgv).
  const mcp = await connectMcpServers({
    servers: { units: { command: process.execPath, args: [...process.execArgv, import.meta.filename, 'serve'] } },
  });
  console.log(`tools: ${mcp.tools.map((tool) => `${tool.name}${tool.readOnly ? ' (read-only)' : ''}`).join(', ')}`);
  const model = scriptedModel((request) => {
    const last = request.messages.at(-1);
    return last?.role === 'tool'
      ? { text: `A marathon is ${textOf(last)}.` }
      : { toolCalls: [{ name: 'mcp__units__km_to_miles', args: { km: 42.195 } }] };
  });
  const agent = createAgent({ model, tools: mcp.tools });
  console.log((await agent.prompt('How long is a marathon in miles?')).text);
  await agent.stop();
  await mcp.close(); // stops the server process
}
