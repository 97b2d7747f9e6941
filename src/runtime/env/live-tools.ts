import type { AgentInfo } from '../../permissions/index.js';
import { type AnyTool, ToolRegistry } from '../../tools/index.js';

/** Where a step stands, for a predicate that decides per step which tools are off. */
export interface StepInfo {
  agent: AgentInfo;
  turn: number;
  step: number;
}

/** Which tools a change applies to: all of them, one or more names, or those a predicate picks at each step. */
export type ToolSelector = 'all' | string | readonly string[] | ((tool: AnyTool, step: StepInfo) => boolean);

/**
 * A live agent's tool set (`agent.tools`). Tools can be added, removed, disabled and enabled again at any time;
 * every change applies at the next step boundary (the step in flight keeps the tools its model call was shown),
 * and the model then sees the new list. A disabled tool is not offered, and a call to it is answered as a call to an
 * unknown tool. Predicates given to `disable` are asked at every step.
 */
export class LiveTools {
  private registry: ToolRegistry;
  private readonly disabledNames = new Set<string>();
  /** `disable('all')`: every tool is off, those added later too, but for the ones enabled by name since. */
  private allOff = false;
  private readonly exceptions = new Set<string>();
  private readonly predicates = new Set<(tool: AnyTool, step: StepInfo) => boolean>();
  private changed = false;
  private current: ToolRegistry;

  /** @internal */
  constructor(initial: ToolRegistry) {
    this.registry = initial;
    this.current = initial;
  }

  /** Adds tools (checked now: a bad definition or a duplicate name throws here, not at the next step). */
  add(...tools: AnyTool[]): this {
    this.registry = new ToolRegistry([...this.registry.tools, ...tools]);
    return this.change();
  }

  /** Removes tools by name (unknown names are ignored). */
  remove(...names: string[]): this {
    const gone = new Set(names);
    this.registry = this.registry.select((tool) => !gone.has(tool.name));
    for (const name of names) this.disabledNames.delete(name);
    return this.change();
  }

  /** Takes tools out of what the model is offered, until they are enabled again. */
  disable(selector: ToolSelector): this {
    if (typeof selector === 'function') this.predicates.add(selector);
    else if (selector === 'all') {
      this.allOff = true;
      this.exceptions.clear();
    } else for (const name of this.namesOf(selector)) this.disabledNames.add(name);
    return this.change();
  }

  /** Offers disabled tools again; `enable('all')` (or no argument) also drops every disabling predicate. */
  enable(selector: ToolSelector = 'all'): this {
    if (typeof selector === 'function') this.predicates.delete(selector);
    else if (selector === 'all') {
      this.allOff = false;
      this.exceptions.clear();
      this.disabledNames.clear();
      this.predicates.clear();
    } else {
      for (const name of this.namesOf(selector)) {
        this.disabledNames.delete(name);
        if (this.allOff) this.exceptions.add(name);
      }
    }
    return this.change();
  }

  /** Every tool the agent has, enabled or not. */
  get names(): string[] {
    return this.registry.names;
  }

  /** The tools the model will be offered at the next step (predicates asked as of that step). */
  enabled(step: StepInfo): string[] {
    return this.select(step).names;
  }

  /**
   * The registry for a step that starts now: rebuilt only after a change, or when predicates must be asked.
   *
   * @internal
   */
  forStep(agent: AgentInfo, turn: number, step: number): ToolRegistry {
    if (!this.changed && this.predicates.size === 0) return this.current;
    this.changed = false;
    this.current = this.select({ agent, turn, step });
    return this.current;
  }

  private select(step: StepInfo): ToolRegistry {
    if (!this.allOff && this.disabledNames.size === 0 && this.predicates.size === 0) return this.registry;
    return this.registry.select((tool) => {
      if (this.allOff && !this.exceptions.has(tool.name)) return false;
      if (this.disabledNames.has(tool.name)) return false;
      for (const disables of this.predicates) if (disables(tool, step)) return false;
      return true;
    });
  }

  private namesOf(selector: string | readonly string[]): readonly string[] {
    return typeof selector === 'string' ? [selector] : selector;
  }

  private change(): this {
    this.changed = true;
    return this;
  }
}
