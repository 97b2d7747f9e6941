import type { RE2JS } from 're2js';
import { z } from 'zod';
import type { JsonObject } from '../protocol/index.js';
import { re2 as linearEngine } from './re2.js';

/** The schemas made by {@link jsonSchema}, with the JSON Schema they came from: the model is sent the original. */
const originals = new WeakMap<z.ZodType, JsonObject>();

/**
 * A tool's arguments described by a JSON Schema instead of zod, for tools known only at run time (MCP servers,
 * plugins, configuration): `defineTool({ name, description, schema: jsonSchema({ type: 'object', … }), execute })`.
 * Arguments are validated before `execute` exactly as a zod schema's are (the schema is turned into one by zod's
 * `z.fromJSONSchema`), so a bad call gets the same error result naming the failing paths; the model is given the
 * JSON Schema as it was written. Refuses, with a TypeError, a schema that is not an object schema or that zod cannot
 * read.
 */
export function jsonSchema(schema: { readonly [key: string]: unknown }): z.ZodObject<Record<string, z.ZodType>> {
  if (schema.type !== undefined && schema.type !== 'object') {
    throw new TypeError(
      `jsonSchema: tool arguments are an object, but the schema's type is ${JSON.stringify(schema.type)}`,
    );
  }
  let converted: z.ZodType;
  try {
    converted = z.fromJSONSchema(
      withoutKeyPatternClosure({ type: 'object', ...schema }) as Parameters<typeof z.fromJSONSchema>[0],
    );
    linearPatterns(converted, new Set());
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new TypeError(`jsonSchema: zod cannot read this JSON Schema (${reason})`);
  }
  if (!(converted instanceof z.ZodObject)) {
    throw new TypeError('jsonSchema: the schema does not describe an object with properties');
  }
  const { $schema: _dialect, ...rest } = schema;
  originals.set(converted, { type: 'object', ...rest } as JsonObject);
  return converted as z.ZodObject<Record<string, z.ZodType>>;
}

/** The JSON Schema a {@link jsonSchema} schema was made from, or undefined for a zod-authored schema. */
export function originalJsonSchema(schema: z.ZodType): JsonObject | undefined {
  return originals.get(schema);
}

/**
 * A JSON Schema `pattern` comes from a server the user did not write, and the text it is matched against from the
 * model: JavaScript's backtracking engine can take minutes on `^(a+)+$` against 30 `a`s and a `!`, with the
 * process frozen. Every pattern zod made is matched by RE2 instead, in time linear in the text. A pattern RE2
 * cannot read (lookaround, backreferences) is not checked here: the server still validates its own arguments.
 */
function linearPatterns(schema: z.ZodType, seen: Set<unknown>): void {
  if (seen.has(schema)) return;
  seen.add(schema);
  const def = schema._zod.def as unknown as Record<string, unknown>;
  for (const check of (def.checks as Array<{ _zod: { def: Record<string, unknown> } }> | undefined) ?? []) {
    const checkDef = check._zod.def;
    if (checkDef.format === 'regex' && checkDef.pattern instanceof RegExp) checkDef.pattern = linear(checkDef.pattern);
  }
  const children: unknown[] = [];
  for (const key of [
    'innerType',
    'in',
    'out',
    'element',
    'left',
    'right',
    'keyType',
    'valueType',
    'rest',
    'catchall',
  ]) {
    children.push(def[key]);
  }
  for (const key of ['options', 'items']) if (Array.isArray(def[key])) children.push(...(def[key] as unknown[]));
  if (def.shape && typeof def.shape === 'object') children.push(...Object.values(def.shape));
  if (typeof def.getter === 'function') children.push((def.getter as () => unknown)());
  for (const child of children) if (child instanceof z.ZodType) linearPatterns(child, seen);
}

/** What zod's regex check uses of a RegExp (`lastIndex`, `test`, `toString`), answered by RE2. */
function linear(pattern: RegExp): RegExp {
  let re2: RE2JS;
  try {
    re2 = linearEngine().compile(pattern.source);
  } catch {
    return { lastIndex: 0, test: () => true, toString: () => pattern.toString() } as unknown as RegExp;
  }
  return {
    lastIndex: 0,
    test: (text: string) => re2.test(text),
    toString: () => pattern.toString(),
  } as unknown as RegExp;
}

/**
 * zod checks `additionalProperties: false` beside `patternProperties` with RegExps of its own that nothing can
 * reach afterwards; such an object accepts unknown keys here instead (the server still refuses them).
 */
function withoutKeyPatternClosure(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutKeyPatternClosure);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    // defineProperty: a key named __proto__ stays a key.
    Object.defineProperty(out, key, {
      value: withoutKeyPatternClosure(value),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  if (out.patternProperties && out.additionalProperties === false) delete out.additionalProperties;
  return out;
}
