import type { ToolCallPart } from '../protocol/index.js';

export type PolicyDecision = 'allow' | 'deny' | 'ask';

/**
 * What a policy answers for one tool call: allow it, deny it or ask a person, with a reason the model or the person
 * sees.
 */
export type PolicyAnswer = PolicyDecision | { decision: PolicyDecision; reason?: string };

export interface AgentInfo {
  id: string;
  parentId?: string;
}

/**
 * How a tool's arguments meet permission rules: `read_file(/etc/**)` matches the `path` argument of `read_file`
 * as a path (normalised against the working directory), `bash(git *)` the `command` argument of `bash` as a shell
 * command line (split into the commands it runs), `fetch(https://example.com/*)` the `url` argument as text.
 */
export type RuleArgument = { path: string } | { command: string } | { text: string };

/** What permission rules and modes need to know about a tool; every tool definition carries them. */
export interface ToolTraits {
  /** Reads only, changes nothing: `default` mode runs it without asking, `plan` mode allows it. */
  readOnly?: boolean;
  /** May destroy or overwrite data: `auto` mode asks before it runs. */
  destructive?: boolean;
  /** The argument a rule's pattern is matched against; a tool without one matches rules by name only. */
  ruleArgument?: RuleArgument;
}

/**
 * Decides, per tool call, whether it runs, is refused, or waits for a person. In a chain, `undefined` means "no
 * opinion": the next policy decides, and when none does, the permission mode's default.
 */
export type Policy = (
  call: ToolCallPart,
  agent: AgentInfo,
  tool: ToolTraits | undefined,
) => PolicyAnswer | undefined | Promise<PolicyAnswer | undefined>;

/**
 * - `default`: read-only tools run; anything else asks.
 * - `plan`: read-only tools only; other calls are refused with a message telling the model it is planning.
 * - `auto`: everything runs except destructive tools, which ask.
 * - `bypass`: everything runs. Deny rules still hold.
 */
export type PermissionMode = 'default' | 'plan' | 'auto' | 'bypass';

export const PERMISSION_MODES: readonly PermissionMode[] = ['default', 'plan', 'auto', 'bypass'];
