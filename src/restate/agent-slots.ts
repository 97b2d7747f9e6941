import * as restate from '@restatedev/restate-sdk';
import type { JsonObject } from '../index.js';

/**
 * `maxAgents` on Restate: how many subagent tasks of one tree are open (started and not settled), counted by a small
 * object keyed by the tree's root (`<name>-slots/<root>`). The root's id
 * travels with every task (a request's `root`, kept in the child's state and the task book's record): it cannot be
 * read off a subagent's key, since a root's own id may contain the `/` that joins a child's key to its parent's.
 * A batch takes
 * its slots before anything of it starts (a journaled call, so a replay reads the same answer) or is refused with
 * `tooManyAgents`; each task gives its slot back once, when it settles (the parent for a foreground task, the
 * task book for a background one, a cancel included).
 */

/**
 * The `maxAgents` a hosted tree counts against: 10,000 unless given; `Infinity` counts
 * nothing (no call per batch, no release per task; bench/history.md says what counting costs).
 */
export function countedLimit(maxAgents: number | undefined): number | undefined {
  const limit = maxAgents ?? 10_000;
  return Number.isFinite(limit) ? limit : undefined;
}

/** What `acquire` answers: whether the slots were taken, and how many were open before. */
export interface SlotGrant {
  granted: boolean;
  open: number;
}

const OPEN = 'open';
const REMEMBERED = 'remembered';
const json = restate.serde.json;

const slotsName = (agentObjectName: string) => `${agentObjectName}-slots`;

/**
 * Asks the counter of the tree whose root is `root` for slots for batches of these sizes (one journaled call for
 * all the batches a step starts), each granted or refused in turn.
 */
export function acquireSlots(
  ctx: restate.ObjectContext,
  agentObjectName: string,
  root: string,
  sizes: number[],
  max: number,
): restate.InvocationPromise<SlotGrant[]> {
  return ctx.genericCall<{ sizes: number[]; max: number }, SlotGrant[]>({
    service: slotsName(agentObjectName),
    method: 'acquire',
    key: root,
    parameter: { sizes, max },
    inputSerde: json,
    outputSerde: json,
  });
}

/**
 * Gives `n` slots back. A call, awaited by the task book before it tells the parent a task settled, so a parent
 * that starts more on hearing it finds the slot free; the parent's own releases are sends, ordered before its later
 * acquires since they go from one invocation to one key.
 */
export function releaseSlots(
  ctx: restate.ObjectContext,
  agentObjectName: string,
  root: string,
  n: number,
  wait: true,
): Promise<null>;
export function releaseSlots(
  ctx: restate.ObjectContext,
  agentObjectName: string,
  root: string,
  n: number,
  wait?: false,
): void;
export function releaseSlots(
  ctx: restate.ObjectContext,
  agentObjectName: string,
  root: string,
  n: number,
  wait = false,
): Promise<null> | undefined {
  const target = { service: slotsName(agentObjectName), method: 'release', key: root, parameter: { n } };
  if (!wait) {
    ctx.genericSend({ ...target, inputSerde: json });
    return undefined;
  }
  return ctx.genericCall<{ n: number }, null>({ ...target, inputSerde: json, outputSerde: json });
}

/**
 * An approval remembered for the rest of a tree's life (`remember` in an `ApprovalAnswer`): a rule as written, or
 * one call, which matches the same tool with the same rule argument (that path, that command line).
 */
export type RememberedApproval = { rule: string } | { call: { name: string; arguments: JsonObject } };

/** Keeps an approval for every later turn of the tree whose root is `root` (a journaled send). */
export function rememberInTree(
  ctx: restate.ObjectContext,
  agentObjectName: string,
  root: string,
  approval: RememberedApproval,
): void {
  ctx.genericSend({
    service: slotsName(agentObjectName),
    method: 'remember',
    key: root,
    parameter: approval,
    inputSerde: json,
  });
}

/** The approvals the tree whose root is `root` remembers (a journaled call). */
export function rememberedInTree(
  ctx: restate.ObjectContext,
  agentObjectName: string,
  root: string,
): restate.InvocationPromise<RememberedApproval[]> {
  return ctx.genericCall<null, RememberedApproval[]>({
    service: slotsName(agentObjectName),
    method: 'remembered',
    key: root,
    parameter: null,
    inputSerde: json,
    outputSerde: json,
  });
}

/**
 * The object of each tree of agents hosted by the object named `agentObjectName` (served beside it), keyed by the
 * tree's root: its open tasks, and the approvals remembered anywhere in it.
 */
export function slotsObject(agentObjectName: string) {
  return restate.object({
    name: slotsName(agentObjectName),
    handlers: {
      /** Takes the slots of each batch in turn if the tree stays within `max`; a batch past it takes none. */
      acquire: async (ctx: restate.ObjectContext, input: { sizes: number[]; max: number }): Promise<SlotGrant[]> => {
        let open = (await ctx.get<number>(OPEN)) ?? 0;
        const grants = input.sizes.map((n) => {
          const granted = open + n <= input.max;
          const grant = { granted, open };
          if (granted) open += n;
          return grant;
        });
        if (grants.some((grant) => grant.granted)) ctx.set(OPEN, open);
        return grants;
      },
      /** Gives `n` slots back, as tasks of the tree end. */
      release: async (ctx: restate.ObjectContext, input: { n: number }): Promise<null> => {
        ctx.set(OPEN, Math.max(0, ((await ctx.get<number>(OPEN)) ?? 0) - input.n));
        return null;
      },
      /** Remembers an approval for the tree (once: the same one again changes nothing). */
      remember: async (ctx: restate.ObjectContext, approval: RememberedApproval): Promise<null> => {
        const known = (await ctx.get<RememberedApproval[]>(REMEMBERED)) ?? [];
        const same = JSON.stringify(approval);
        if (!known.some((entry) => JSON.stringify(entry) === same)) ctx.set(REMEMBERED, [...known, approval]);
        return null;
      },
      /** What the tree remembers, oldest first. */
      remembered: restate.handlers.object.shared(
        async (ctx: restate.ObjectSharedContext): Promise<RememberedApproval[]> =>
          (await ctx.get<RememberedApproval[]>(REMEMBERED)) ?? [],
      ),
    },
  });
}
