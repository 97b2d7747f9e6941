/** What the live view knows of each agent of the tree, folded from the event stream. */
import { summarize } from '../inspect/sanitize.js';
import type { AgentEvent, JsonValue, Usage } from '../protocol/index.js';

export type RowStatus = 'thinking' | 'tool' | 'waiting' | 'done' | 'failed' | 'interrupted' | 'idle';

export interface AgentRow {
  id: string;
  parentId?: string;
  depth: number;
  status: RowStatus;
  /** The tool running now, with its main argument. */
  tool?: string;
  tokens: number;
  usage: Usage;
  startedAt: number;
  endedAt?: number;
}

/**
 * A call's arguments as a person may see them: keys such as `password` or `api_key`, the process's API keys and
 * `sk-…` / `Bearer …` credentials cut out (the inspector's rules), long strings shortened.
 */
export function redactedArgs(args: JsonValue | undefined): string {
  return JSON.stringify(summarize(args ?? {}, { maxStringLength: 120 }));
}

/** The argument that says what a call is about: a path, a command, a pattern, a prompt (redacted). */
function mainArgument(args: JsonValue | undefined): string {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return '';
  for (const key of ['command', 'path', 'pattern', 'prompt', 'id']) {
    const value = args[key];
    if (typeof value === 'string') return String(summarize(value)).replace(/\s+/g, ' ');
  }
  if (Array.isArray(args.tasks)) return `${args.tasks.length} tasks`;
  return '';
}

/** What a person reads for a tool: its `label` where it declares one, its name otherwise. */
function toolTitle(call: { toolName: string; label?: string }): string {
  return call.label ?? call.toolName;
}

/** A call as one phrase: the tool's title and the argument it is about. */
export function describeCall(call: { toolName: string; label?: string; args: JsonValue }): string {
  return `${toolTitle(call)} ${mainArgument(call.args)}`.trimEnd();
}

export class AgentRows {
  private readonly rows = new Map<string, AgentRow>();

  constructor(private readonly now: () => number = Date.now) {}

  private row(id: string, parentId: string | undefined): AgentRow {
    let row = this.rows.get(id);
    if (!row) {
      const parent = parentId ? this.rows.get(parentId) : undefined;
      row = {
        id,
        ...(parentId ? { parentId } : {}),
        depth: parent ? parent.depth + 1 : 0,
        status: 'idle',
        tokens: 0,
        usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
        startedAt: this.now(),
      };
      this.rows.set(id, row);
    }
    return row;
  }

  apply(event: AgentEvent): void {
    const row = this.row(event.agentId, event.parentId);
    switch (event.type) {
      case 'turn_start':
        row.status = 'thinking';
        row.endedAt = undefined;
        break;
      case 'message_start':
        row.status = 'thinking';
        row.tool = undefined;
        break;
      case 'tool_execution_start':
        row.status = 'tool';
        row.tool = describeCall(event);
        break;
      case 'tool_execution_end':
        row.tool = undefined;
        row.status = 'thinking';
        break;
      case 'approval_requested':
        row.status = 'waiting';
        row.tool = describeCall(event);
        break;
      case 'usage': {
        const u = event.usage;
        row.tokens += u.input + u.output + u.cacheRead + u.cacheWrite;
        for (const key of ['input', 'output', 'cacheRead', 'cacheWrite', 'reasoning'] as const)
          row.usage[key] += u[key];
        break;
      }
      case 'subagent_start':
        this.row(event.childId, event.agentId);
        break;
      case 'turn_end':
        row.status =
          event.stopReason === 'error' ? 'failed' : event.stopReason === 'interrupted' ? 'interrupted' : 'done';
        row.tool = undefined;
        row.endedAt = this.now();
        break;
    }
  }

  /** Depth first, children after their parent in the order they started. */
  ordered(): AgentRow[] {
    const all = [...this.rows.values()];
    const out: AgentRow[] = [];
    const visit = (parentId: string | undefined) => {
      for (const row of all) {
        if (row.parentId !== parentId) continue;
        out.push(row);
        visit(row.id);
      }
    };
    visit(undefined);
    return out;
  }
}
