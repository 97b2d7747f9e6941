import type {
  ImagePart,
  JsonObject,
  JsonValue,
  ModelStopReason,
  ProviderData,
  ToolResultPart,
  Usage,
} from '../protocol/index.js';
import { emptyUsage, ModelError, registerSecret } from '../protocol/index.js';
import { loadPeer, type PeerName } from '../protocol/peers.js';
import type { ClassifyContext } from './http-errors.js';

/**
 * Usage is normalised the same way for every provider:
 * - `input`: prompt tokens billed at the normal rate, i.e. neither read from nor written to the cache
 *   (Anthropic's `input_tokens`; OpenAI's prompt tokens minus `cached_tokens`), so that
 *   `input + cacheRead + cacheWrite` is the whole prompt;
 * - `output`: generated tokens, reasoning included; `reasoning`: the part of `output` spent reasoning.
 */
export function usageOf(parts: Partial<Usage>): Usage {
  const usage = emptyUsage();
  for (const key of Object.keys(usage) as (keyof Usage)[]) {
    const value = parts[key];
    if (typeof value === 'number' && Number.isFinite(value)) usage[key] = Math.max(0, value);
  }
  return usage;
}

/**
 * A chat-style finish reason as Troupe's stop reason. Takes either spelling (OpenAI's `content_filter`, the AI SDK's
 * `content-filter`); `hasCalls` says whether the answer carried tool calls.
 */
export function finishStopReason(finish: string | undefined, hasCalls: boolean): ModelStopReason {
  switch (finish) {
    case 'length':
      return 'length';
    case 'content_filter':
    case 'content-filter':
      return 'content_filter';
    case 'tool_calls':
    case 'tool-calls':
    case 'function_call':
      return 'tool_calls';
    default:
      // Gemini and some compatible servers finish a tool-calling answer with a plain stop.
      return hasCalls ? 'tool_calls' : 'stop';
  }
}

/** Whether provider-specific data may be sent back: only to the provider and model that made it. */
export function sameOrigin(
  data: Pick<ProviderData, 'provider' | 'model'> | undefined,
  provider: string,
  model: string,
): boolean {
  return data !== undefined && data.provider === provider && data.model === model;
}

export function abortedError(provider: string, label: string): ModelError {
  return new ModelError({ code: 'aborted', message: `${label}: the call was aborted`, provider });
}

export function imageUrl(part: ImagePart): string {
  return part.source.kind === 'url' ? part.source.url : `data:${part.source.mediaType};base64,${part.source.data}`;
}

/** The text of a tool result, its images left out. */
export function toolResultText(part: ToolResultPart): string {
  let text = '';
  for (const item of part.content) if (item.type === 'text') text += (text ? '\n' : '') + item.text;
  return text;
}

export function toolResultImages(part: ToolResultPart): ImagePart[] {
  return part.content.filter((item): item is ImagePart => item.type === 'image');
}

/** A tool's JSON Schema without the `$schema` dialect marker, which function-calling APIs do not need. */
export function toolSchema(schema: JsonObject): JsonObject {
  if (!('$schema' in schema)) return schema;
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

const STRICT_UNSUPPORTED = new Set([
  'patternProperties',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
  'dependentRequired',
  'dependentSchemas',
  'if',
  'then',
  'else',
  'not',
  'minProperties',
  'maxProperties',
  'contains',
  'prefixItems',
]);

/**
 * The strict-mode (OpenAI Structured Outputs) version of a JSON Schema, or undefined when it has none. Strict
 * mode needs every object to close its properties and list all of them as required, and knows no
 * `patternProperties`, `not`, `if` …. An object that leaves `additionalProperties` unset (what zod emits for
 * input schemas) is closed here: the model then sends no extra keys, which a tool would strip anyway. A schema
 * with an optional field, or open on purpose (`additionalProperties: true` or a schema), has no strict version
 * and goes out with `strict: false`.
 */
export function strictSchema(schema: JsonObject): JsonObject | undefined {
  const strict = toStrict(schema, 0);
  return strict !== undefined && typeof strict === 'object' && strict !== null && !Array.isArray(strict)
    ? strict
    : undefined;
}

function toStrict(node: JsonValue, depth: number): JsonValue | undefined {
  if (depth > 64) return undefined;
  if (Array.isArray(node)) {
    const out: JsonValue[] = [];
    for (const item of node) {
      const strict = toStrict(item, depth + 1);
      if (strict === undefined) return undefined;
      out.push(strict);
    }
    return out;
  }
  if (typeof node !== 'object' || node === null) return node;
  for (const key of Object.keys(node)) if (STRICT_UNSUPPORTED.has(key)) return undefined;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'enum' || key === 'const' || key === 'default' || key === 'examples' || key === 'required') {
      out[key] = value;
      continue;
    }
    if (key === 'properties' || key === '$defs' || key === 'definitions') {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
      const map: JsonObject = {};
      for (const [name, sub] of Object.entries(value)) {
        const strict = toStrict(sub, depth + 1);
        if (strict === undefined) return undefined;
        map[name] = strict;
      }
      out[key] = map;
      continue;
    }
    if (typeof value === 'object' && value !== null) {
      const strict = toStrict(value, depth + 1);
      if (strict === undefined) return undefined;
      out[key] = strict;
    } else out[key] = value;
  }
  const type = node.type;
  const isObject = type === 'object' || (Array.isArray(type) && type.includes('object')) || 'properties' in node;
  if (isObject) {
    if (node.additionalProperties !== undefined && node.additionalProperties !== false) return undefined;
    out.additionalProperties = false;
    const properties = node.properties;
    const keys =
      typeof properties === 'object' && properties !== null && !Array.isArray(properties)
        ? Object.keys(properties)
        : [];
    const required = Array.isArray(node.required) ? node.required : [];
    if (keys.length !== required.length || !keys.every((key) => required.includes(key))) return undefined;
    if (!('properties' in out)) out.properties = {};
    if (!('required' in out)) out.required = [];
  }
  return out;
}

/**
 * The SDK client, made on the model's first request and then shared: an application that never calls the model
 * (or uses only another provider) does not pay the SDK's import. `given` is used as it is. Without it the SDK is an
 * optional peer, `peer.name`: its absence is reported here, when the model is made (a MissingPeerError naming
 * `peer.feature`), not on the first turn. `make` looks up the API key when it runs; a missing key throws there and
 * then, so it fails that request and is asked again next time.
 */
export function lazyClient<C>(
  peer: { name: PeerName; feature: string },
  given: C | undefined,
  make: () => Promise<C>,
): () => Promise<C> {
  if (given === undefined) loadPeer(peer.name, peer.feature, () => import.meta.resolve(peer.name));
  let client: Promise<C> | undefined = given === undefined ? undefined : Promise.resolve(given);
  return () => {
    client ??= make();
    return client;
  };
}

/** The API key from the options or the environment, or the `auth_error` that names both. */
export function apiKeyFrom(explicit: string | undefined, env: string, ctx: ClassifyContext): string {
  const key = explicit ?? process.env[env];
  registerSecret(key);
  if (key) return key;
  const message = `${ctx.label ?? ctx.provider}: no API key (pass apiKey or set ${env})`;
  throw new ModelError({ code: 'auth_error', message, provider: ctx.provider });
}
