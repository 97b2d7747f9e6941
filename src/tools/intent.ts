import type { JsonObject, JsonValue, ToolSpec } from '../protocol/index.js';

/**
 * The argument an agent with `toolIntent` adds to every tool: the model says in one sentence why it calls the tool,
 * for UIs and logs. It is the model's, not the tool's: stripped before the tool's own schema sees the arguments.
 */
const INTENT_ARGUMENT = '_intent';

const INTENT_PROPERTY: JsonObject = {
  type: 'string',
  description: 'Why you are calling this tool, in one sentence.',
};

/** The spec with `_intent` first among its properties and required (strict providers require every property). */
export function withIntent(spec: ToolSpec): ToolSpec {
  const schema = spec.inputSchema;
  const properties = (schema.properties ?? {}) as JsonObject;
  const required = Array.isArray(schema.required) ? schema.required : [];
  return {
    ...spec,
    inputSchema: {
      ...schema,
      properties: { [INTENT_ARGUMENT]: INTENT_PROPERTY, ...properties },
      required: [INTENT_ARGUMENT, ...required.filter((name) => name !== INTENT_ARGUMENT)],
    },
  };
}

/** The intent the model gave, if it gave one as text. */
export function intentOf(args: JsonValue | undefined): string | undefined {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return undefined;
  const intent = (args as JsonObject)[INTENT_ARGUMENT];
  return typeof intent === 'string' && intent.trim() !== '' ? intent.trim() : undefined;
}

/** The arguments without `_intent`; the same object when it has none. */
export function withoutIntent(args: JsonObject): JsonObject {
  if (!(INTENT_ARGUMENT in args)) return args;
  const { [INTENT_ARGUMENT]: _intent, ...rest } = args;
  return rest;
}
