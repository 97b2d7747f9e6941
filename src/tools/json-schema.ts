import { z } from 'zod';
import type { JsonObject } from '../protocol/index.js';

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
    converted = z.fromJSONSchema({ type: 'object', ...schema } as Parameters<typeof z.fromJSONSchema>[0]);
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
