import { z } from 'zod';
import type { JsonObject, ToolCallPart, ToolResultPart, ToolSpec } from '../protocol/index.js';
import { errorResult } from '../protocol/index.js';
import type { AnyTool } from './define-tool.js';
import { withIntent, withoutIntent } from './intent.js';
import { originalJsonSchema } from './json-schema.js';

/** Thrown at registration: the tool list cannot be sent to a model as it is. */
export class ToolDefinitionError extends Error {
  override readonly name = 'ToolDefinitionError';
}

// The strictest provider rule (OpenAI's): letters, digits, underscores and dashes, at most 64 characters.
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export type Validation = { ok: true; tool: AnyTool; args: unknown } | { ok: false; error: ToolResultPart };

/** The tools of one agent: checked once, turned into JSON Schema once, looked up by name. */
export class ToolRegistry {
  readonly specs: readonly ToolSpec[];
  private readonly byName = new Map<string, AnyTool>();
  private intentSpecs?: readonly ToolSpec[];

  constructor(tools: readonly AnyTool[] = []) {
    const specs: ToolSpec[] = [];
    for (const tool of tools) {
      specs.push(this.register(tool));
    }
    this.specs = specs;
  }

  /** The tools `keep` accepts, sharing this registry's checked tools and JSON Schema (nothing is converted again). */
  select(keep: (tool: AnyTool) => boolean): ToolRegistry {
    const selected = new ToolRegistry();
    const specs: ToolSpec[] = [];
    for (const spec of this.specs) {
      const tool = this.byName.get(spec.name) as AnyTool;
      if (!keep(tool)) continue;
      selected.byName.set(spec.name, tool);
      specs.push(spec);
    }
    (selected as { specs: readonly ToolSpec[] }).specs = specs;
    return selected;
  }

  /** Every tool, in order. */
  get tools(): AnyTool[] {
    return [...this.byName.values()];
  }

  get(name: string): AnyTool | undefined {
    return this.byName.get(name);
  }

  /** The specs with the `_intent` argument added to each (see `toolIntent`), made on first use. */
  get specsWithIntent(): readonly ToolSpec[] {
    this.intentSpecs ??= this.specs.map(withIntent);
    return this.intentSpecs;
  }

  get names(): string[] {
    return [...this.byName.keys()];
  }

  /**
   * Parses a call's arguments with its tool's schema; every failure is a result the model can act on. With
   * `stripIntent`, the model's `_intent` is taken out first: the tool's schema never sees it.
   */
  validate(call: ToolCallPart, stripIntent = false): Validation {
    const tool = this.byName.get(call.name);
    if (!tool) {
      const known = this.names.length > 0 ? this.names.join(', ') : 'none';
      return { ok: false, error: errorResult(call, `Unknown tool "${call.name}". Available tools: ${known}.`) };
    }
    if (call.invalidArguments) {
      return {
        ok: false,
        error: errorResult(
          call,
          `The arguments of ${call.name} are not valid JSON (${call.invalidArguments.error}). Send them again as one JSON object.`,
        ),
      };
    }
    const parsed = tool.schema.safeParse(stripIntent ? withoutIntent(call.arguments) : call.arguments);
    if (parsed.success) return { ok: true, tool, args: parsed.data };
    return {
      ok: false,
      error: errorResult(call, `Invalid arguments for ${call.name}:\n${describeIssues(parsed.error)}`),
    };
  }

  private register(tool: AnyTool): ToolSpec {
    const name = (tool as { name?: unknown }).name;
    if (typeof name !== 'string' || name.length === 0) throw new ToolDefinitionError('A tool needs a non-empty name');
    if (!TOOL_NAME.test(name)) {
      throw new ToolDefinitionError(
        `Tool name "${name}" is not allowed: use letters, digits, "_" and "-", at most 64 characters`,
      );
    }
    if (this.byName.has(name)) throw new ToolDefinitionError(`Two tools are named "${name}"`);
    if (!(tool.schema instanceof z.ZodObject)) {
      throw new ToolDefinitionError(
        `Tool "${name}": schema must be z.object(...), since models take arguments as an object`,
      );
    }
    if (typeof tool.execute !== 'function') throw new ToolDefinitionError(`Tool "${name}" has no execute function`);
    this.byName.set(name, tool);
    return {
      name,
      description: tool.description ?? '',
      // A schema written as JSON Schema (`jsonSchema()`) goes to the model as written, not as zod's round trip.
      inputSchema: originalJsonSchema(tool.schema) ?? toolJsonSchema(tool.schema, name),
    };
  }
}

/**
 * A tool schema's JSON Schema, converted once per schema object: agents made one by one with the same tools (a fresh
 * array each time, so no shared registry) would each convert it again (~1 % of a 200-step W1 run). Specs are
 * never mutated (providers copy what they change), so agents can share them as they share a registry.
 */
const toolSchemas = new WeakMap<z.ZodType, JsonObject>();

function toolJsonSchema(schema: z.ZodType, name: string): JsonObject {
  let json = toolSchemas.get(schema);
  if (!json) {
    json = jsonSchemaOf(schema, `Tool "${name}": its schema`);
    toolSchemas.set(schema, json);
  }
  return json;
}

/** A structured-answer schema with the JSON Schema the model is given, converted once. */
export interface OutputSpec {
  schema: z.ZodType;
  jsonSchema: JsonObject;
}

/** Checks an `outputSchema` when the agent or prompt is made, not at the first model call. */
export function outputSpec(schema: z.ZodType): OutputSpec {
  return { schema, jsonSchema: jsonSchemaOf(schema, 'outputSchema') };
}

// The model writes the value the schema parses, so it is described by the schema's input side.
function jsonSchemaOf(schema: z.ZodType, owner: string): JsonObject {
  let json: Record<string, unknown>;
  try {
    json = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ToolDefinitionError(`${owner} cannot be expressed as JSON Schema (${reason})`);
  }
  const { $schema: _dialect, ...rest } = json;
  return rest as JsonObject;
}

/** One line per failing path, so the model can see exactly which argument to fix. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `- ${issue.path.length > 0 ? issue.path.join('.') : '(arguments)'}: ${issue.message}`)
    .join('\n');
}
