/**
 * `troupe/mcp`: tools from Model Context Protocol servers.
 *
 * @module troupe/mcp
 */
export {
  connectMcpServers,
  type HttpServer,
  McpConnectError,
  type McpConnection,
  type McpOptions,
  type McpServerConfig,
  mcpToolName,
} from './client.js';
export { loadMcpConfig } from './config.js';
export type { StdioServer } from './stdio-transport.js';
