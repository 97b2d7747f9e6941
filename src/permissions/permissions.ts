import type { ToolCallPart } from '../protocol/index.js';
import {
  allowsCommandLine,
  type CallSubject,
  type MatchContext,
  PermissionRuleError,
  parseRule,
  permissiveMatch,
  type Rule,
  restrictiveMatch,
  subjectOf,
} from './rules.js';
import {
  type AgentInfo,
  PERMISSION_MODES,
  type PermissionMode,
  type Policy,
  type PolicyAnswer,
  type PolicyDecision,
  type ToolTraits,
} from './types.js';

export interface PermissionRules {
  /** Refused whatever else says: checked before anything can allow. */
  deny?: readonly string[];
  /** Wait for a person, even where the mode or an allow rule would let them run. */
  ask?: readonly string[];
  /** Run without asking. */
  allow?: readonly string[];
}

/**
 * An agent's permission rules and mode: `deny`, `ask` and `allow` rules such as `bash(git *)` or `read_file(/etc/**)`,
 * and what happens to calls no rule decides.
 */
export interface PermissionsConfig extends PermissionRules {
  /** What happens to calls no rule or policy decides (see {@link PermissionMode}). */
  mode?: PermissionMode;
  /** The directory paths in rules and in tool arguments are resolved against (default: the process's). */
  cwd?: string;
  /** What `~` in a path means (default: the `HOME` environment variable). */
  home?: string;
}

/** The answer for one call, with the rule or reason that gave it. */
export interface Decision {
  decision: PolicyDecision;
  reason?: string;
  /** The rule that decided, as written. */
  rule?: string;
}

/**
 * Worded for a model, and for a subagent above all: it must not try the same call again, nor reach the same end by
 * another tool, a script or a different command; its parent learns of the refusal from the event and the answer.
 */
function denialText(why: string): string {
  return (
    `${why}. This is a standing decision, not a passing error: do not retry this call, and do not try to get the ` +
    'same result another way (another tool, a script, a different command or a subagent). Continue without it; if ' +
    'the task cannot be done without it, say so in your final answer.'
  );
}

const PLANNING =
  'You are in plan mode: only read-only tools may run. Do not change anything yet; finish the plan and present ' +
  'it, and the user will switch modes to carry it out';

/**
 * An agent's permission state: its rules, its mode and what a person approved "always". A subagent gets a child
 * of its parent's: the ancestors' deny and ask rules hold in it, its mode is the parent's (live) unless its
 * profile set one, and approvals remembered anywhere in the tree are remembered for the whole session.
 */
export class Permissions {
  private ownMode: PermissionMode | undefined;
  private readonly deny: Rule[];
  private readonly ask: Rule[];
  private readonly allow: Rule[];
  /** What a person approved with `remember`: shared by the whole tree (it lives on the root). */
  private readonly remembered: Remembered;
  readonly context: MatchContext;

  constructor(
    config: PermissionsConfig = {},
    private readonly parent?: Permissions,
  ) {
    if (config.mode !== undefined) checkMode(config.mode);
    this.ownMode = config.mode;
    this.deny = (config.deny ?? []).map(parseRule);
    this.ask = (config.ask ?? []).map(parseRule);
    this.allow = (config.allow ?? []).map(parseRule);
    this.remembered = parent ? parent.remembered : { rules: [], calls: new Set() };
    const home = config.home ?? parent?.context.home ?? process.env.HOME;
    this.context = {
      cwd: config.cwd ?? parent?.context.cwd ?? process.cwd(),
      ...(home === undefined ? {} : { home }),
    };
  }

  /** The mode in force: this agent's own, or its parent's. `undefined`: nothing set, calls run unless refused. */
  get mode(): PermissionMode | undefined {
    return this.ownMode ?? this.parent?.mode;
  }

  /** Changes the mode from the next authorization on; subagents that inherit it follow. */
  set mode(mode: PermissionMode | undefined) {
    if (mode !== undefined) checkMode(mode);
    this.ownMode = mode;
  }

  /** A subagent's permissions: more rules and a mode of its own are optional; the parent's still hold. */
  child(config: PermissionsConfig = {}): Permissions {
    return new Permissions(config, this);
  }

  /** Remembers an approval for the rest of the session: calls the rule matches run without asking. */
  remember(rule: string): void {
    const parsed = parseRule(rule);
    if (!this.remembered.rules.some((known) => known.source === parsed.source)) this.remembered.rules.push(parsed);
  }

  /**
   * Remembers one approved call: the same tool with the same rule argument (that path, that command line) runs
   * without asking from now on; a tool without a rule argument is remembered by name. Returns what was remembered.
   */
  rememberCall(call: ToolCallPart, tool: ToolTraits | undefined): string {
    const key = callKey(call, tool, this.context);
    if (key === undefined) {
      this.remember(call.name);
      return call.name;
    }
    this.remembered.calls.add(key);
    return key;
  }

  /** What this session remembers: rules as written, and single calls as `tool(value)`. */
  get rememberedRules(): string[] {
    return [...this.remembered.rules.map((rule) => rule.source), ...this.remembered.calls];
  }

  /**
   * Whether anything here can refuse or hold a call. When nothing can, the runtime skips authorization entirely
   * (no promise, no rule matching), which keeps an agent without permissions exactly as fast as before.
   */
  get inert(): boolean {
    return (
      this.mode === undefined &&
      this.remembered.rules.length === 0 &&
      this.remembered.calls.size === 0 &&
      !this.hasRules()
    );
  }

  private hasRules(): boolean {
    return this.deny.length + this.ask.length + this.allow.length > 0 || (this.parent?.hasRules() ?? false);
  }

  /**
   * The chain, first decisive answer wins: deny rules (this agent's and its ancestors'), plan mode's refusal of
   * what is not read-only, ask rules, approvals remembered this session, the policies in their order, allow
   * rules, and finally the mode's default. Several policies are one `chainPolicies`.
   */
  async decide(call: ToolCallPart, agent: AgentInfo, tool: ToolTraits | undefined, policy?: Policy): Promise<Decision> {
    const ruled = this.decideByRules(call, tool, 'restrictive');
    if (ruled) return ruled;
    if (policy) {
      const answer = await policy(call, agent, tool);
      if (answer !== undefined) return fromAnswer(answer);
    }
    return this.decideByRules(call, tool, 'permissive') ?? this.modeDefault(tool);
  }

  /**
   * The rules alone, without the policies and the mode: what could refuse or hold the call (`restrictive`), or
   * what could let it run (`permissive`). `undefined` when no rule speaks about it.
   */
  decideByRules(
    call: ToolCallPart,
    tool: ToolTraits | undefined,
    which: 'restrictive' | 'permissive',
  ): Decision | undefined {
    const subject = subjectOf(call.arguments, tool, this.context);
    if (which === 'restrictive') {
      const denied = this.firstRestrictive('deny', call.name, subject);
      if (denied)
        return {
          decision: 'deny',
          rule: denied.source,
          reason: denialText(`The rule "${denied.source}" forbids this call`),
        };
      if (subject.kind === 'command' && subject.parsed.doubts.length > 0 && this.hasArgumentRules('deny', call.name)) {
        return { decision: 'ask', reason: `the command cannot be fully checked: ${subject.parsed.doubts.join('; ')}` };
      }
      if (this.mode === 'plan' && tool?.readOnly !== true) return { decision: 'deny', reason: denialText(PLANNING) };
      // An interpreter's inline program may do anything a denied command does; only bypass runs it unasked.
      if (
        subject.kind === 'command' &&
        subject.parsed.opaque.length > 0 &&
        this.mode !== 'bypass' &&
        (this.mode !== undefined || this.hasArgumentRules('deny', call.name))
      ) {
        return { decision: 'ask', reason: `no rule can see inside it: ${subject.parsed.opaque.join('; ')}` };
      }
      const asked = this.firstRestrictive('ask', call.name, subject);
      if (asked) return { decision: 'ask', rule: asked.source };
      return undefined;
    }
    const key = this.remembered.calls.size > 0 ? callKey(call, tool, this.context) : undefined;
    if (key !== undefined && this.remembered.calls.has(key)) {
      return { decision: 'allow', rule: key, reason: 'remembered for this session' };
    }
    const remembered = this.firstPermissive(this.remembered.rules, call.name, subject);
    if (remembered.rule)
      return { decision: 'allow', rule: remembered.rule.source, reason: 'remembered for this session' };
    const allowed = this.firstPermissive(this.allowRules(), call.name, subject);
    if (allowed.rule) return { decision: 'allow', rule: allowed.rule.source };
    if (allowed.doubt) return { decision: 'ask', reason: `the command cannot be fully checked: ${allowed.doubt}` };
    return undefined;
  }

  /**
   * Whether a deny rule forbids `tool` to use a path it met while walking a folder (grep, glob, list, tree skip
   * it, and below it). `real` is a real path: walks do not follow links.
   */
  deniesPath(tool: string, real: string): boolean {
    if (!this.hasArgumentRules('deny', tool)) return false;
    return this.firstRestrictive('deny', tool, { kind: 'path', value: real, real }) !== undefined;
  }

  private modeDefault(tool: ToolTraits | undefined): Decision {
    switch (this.mode) {
      case undefined:
      case 'bypass':
        return { decision: 'allow' };
      case 'auto':
        return tool?.destructive === true ? { decision: 'ask', reason: 'a destructive tool' } : { decision: 'allow' };
      case 'default':
      case 'plan':
        return tool?.readOnly === true ? { decision: 'allow' } : { decision: 'ask' };
    }
  }

  private firstRestrictive(kind: 'deny' | 'ask', name: string, subject: CallSubject): Rule | undefined {
    for (let level: Permissions | undefined = this; level; level = level.parent) {
      for (const rule of level[kind]) {
        if (rule.matchesTool(name) && restrictiveMatch(rule, subject, this.context)) return rule;
      }
    }
    return undefined;
  }

  private hasArgumentRules(kind: 'deny' | 'ask', name: string): boolean {
    for (let level: Permissions | undefined = this; level; level = level.parent) {
      if (level[kind].some((rule) => rule.argument !== undefined && rule.matchesTool(name))) return true;
    }
    return false;
  }

  /** A child's allow rules add to its ancestors': what a parent may run without asking, its subagents may too. */
  private allowRules(): Rule[] {
    return this.parent ? [...this.allow, ...this.parent.allowRules()] : this.allow;
  }

  private firstPermissive(rules: readonly Rule[], name: string, subject: CallSubject): { rule?: Rule; doubt?: string } {
    const forTool = rules.filter((rule) => rule.matchesTool(name));
    if (forTool.length === 0) return {};
    if (subject.kind === 'command') {
      const byName = forTool.find((rule) => rule.argument === undefined);
      if (byName) return { rule: byName };
      const covered = allowsCommandLine(forTool, subject);
      if (covered.allowed) return { rule: forTool[0] as Rule };
      return covered.doubt ? { doubt: covered.doubt } : {};
    }
    const rule = forTool.find((candidate) => permissiveMatch(candidate, subject, this.context));
    return rule ? { rule } : {};
  }
}

/** Several policies as one, asked in order: the first that answers decides; none answering leaves it open. */
export function chainPolicies(policies: Policy | readonly Policy[] | undefined): Policy | undefined {
  if (policies === undefined || typeof policies === 'function') return policies;
  if (policies.length <= 1) return policies[0];
  return async (call, agent, tool) => {
    for (const policy of policies) {
      const answer = await policy(call, agent, tool);
      if (answer !== undefined) return answer;
    }
    return undefined;
  };
}

function fromAnswer(answer: PolicyAnswer): Decision {
  const decision = typeof answer === 'string' ? { decision: answer } : answer;
  if (decision.decision !== 'allow' && decision.decision !== 'deny' && decision.decision !== 'ask') {
    return { decision: 'deny', reason: `the policy answered ${JSON.stringify(decision.decision)}` };
  }
  return decision;
}

function checkMode(mode: string): void {
  if (!PERMISSION_MODES.includes(mode as PermissionMode)) {
    throw new PermissionRuleError(
      `Unknown permission mode ${JSON.stringify(mode)}: use ${PERMISSION_MODES.join(', ')}`,
    );
  }
}

interface Remembered {
  rules: Rule[];
  /** Single approved calls, by {@link callKey}. */
  calls: Set<string>;
}

/** `tool(value)` for a tool with a rule argument (a path resolved against the working directory), else undefined. */
function callKey(call: ToolCallPart, tool: ToolTraits | undefined, context: MatchContext): string | undefined {
  const subject = subjectOf(call.arguments, tool, context);
  if (subject.kind === 'path' || subject.kind === 'text' || subject.kind === 'command') {
    return `${call.name}(${subject.value})`;
  }
  return undefined;
}
