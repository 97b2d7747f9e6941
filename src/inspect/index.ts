export {
  type ConnectInspectorOptions,
  connectInspector,
  type InspectorConnection,
  type OpenInspector,
  openWebSocketInspector,
  type WebSocketInspectorOptions,
} from './connect.js';
export { stateIds, type TransitionInfo, toMermaid, toStudioJSON, transitionKeys, transitionList } from './export.js';
export type { InspectorAck, InspectorCommand } from './protocol.js';
export {
  createSanitizer,
  REDACTED,
  type SanitizeOptions,
  type Sanitizer,
  sanitizeInspection,
  summarize,
} from './sanitize.js';
export { type InspectorServer, type InspectorServerOptions, startInspectorServer } from './server.js';
