import type { z } from 'zod';
import type { ToolTraits } from '../permissions/types.js';
import type { JsonValue, ToolResultContent } from '../protocol/index.js';

/**
 * Whether a tool's calls may run beside the other calls of the same step (`parallel`) or must run alone (`sequential`).
 */
export type ExecutionMode = 'parallel' | 'sequential';

/**
 * What a tool's `execute` gets besides its arguments: which call and agent it serves, a signal that aborts it, and a
 * way to report progress.
 */
export interface ToolContext {
  toolCallId: string;
  agentId: string;
  /** Aborted when the turn is interrupted or the tool times out. */
  signal: AbortSignal;
  /** Reports progress; each call becomes a `tool_execution_update` event. */
  update(partial: JsonValue): void;
  /**
   * Whether the agent's deny rules forbid this tool the given real path: a tool that walks folders skips such
   * entries (and what is below them). Absent where no rule can say so.
   */
  denied?(path: string): boolean;
}

/** What a tool may return: plain text, or content with extras. Any other value is sent to the model as JSON. */
export type ToolOutput =
  | string
  | {
      content: string | ToolResultContent[];
      /** For observers only: never sent to the model. */
      details?: JsonValue;
      isError?: boolean;
      /** Ends the turn after this batch, when every result of the batch asks for it. */
      terminate?: boolean;
    };

/**
 * A tool. Its `ToolTraits` (`readOnly`, `destructive`, `ruleArgument`) tell permission modes and rules what
 * it does: `readOnly` tools run without asking in `default` mode, `destructive` ones ask in `auto` mode, and
 * `ruleArgument` names the argument a rule such as `read_file(/etc/**)` or `bash(git *)` is matched against.
 */
export interface ToolDefinition<Schema extends z.ZodObject = z.ZodObject> extends ToolTraits {
  name: string;
  /** A human-readable name for UIs, logs and events (`Read file` for `read_file`); the model never sees it. */
  label?: string;
  description: string;
  schema: Schema;
  /**
   * Runs the tool on the model's parsed arguments. It returns text or content, and may throw: the model then sees an
   * error result, and the agent goes on.
   */
  execute(args: z.output<Schema>, ctx: ToolContext): ToolOutput | Promise<ToolOutput>;
  /** `parallel` (default) calls run together with their neighbours; a `sequential` call runs alone. */
  executionMode?: ExecutionMode;
  /** The call fails with a timeout result after this long; the tool's signal is aborted. No limit by default. */
  timeoutMs?: number;
  /**
   * Running a call twice does no harm (it only reads, or its effect is idempotent). A call that was running when
   * its process died then runs again when the session resumes, instead of getting an "interrupted by a restart"
   * result.
   */
  safeToRepeat?: boolean;
}

/** Any tool, whatever its schema: what registries and agents take. */
// biome-ignore lint/suspicious/noExplicitAny: a tool list mixes schemas, so the argument type must be erased here.
export type AnyTool = ToolDefinition<any>;

/**
 * Declares a tool; the schema types `execute`'s arguments. The model sees the name, the description and the schema
 * as JSON Schema; arguments that fail the schema come back to the model as an error result, never to `execute`.
 *
 * @example
 * ```ts
 * const weather = defineTool({
 *   name: 'get_weather',
 *   description: 'Current weather for a city',
 *   schema: z.object({ city: z.string() }),
 *   execute: async ({ city }) => `Sunny in ${city}`,
 * });
 * ```
 */
export function defineTool<Schema extends z.ZodObject>(definition: ToolDefinition<Schema>): ToolDefinition<Schema> {
  return definition;
}
