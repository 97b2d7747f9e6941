import type { AnyActorRef, AnyEventObject, InspectionEvent, Observer } from 'xstate';
import { isSecretName, knownSecrets } from '../protocol/secrets.js';

/**
 * What inspectors may see. Every snapshot, event and action parameter is summarised here, synchronously and
 * BEFORE anything serialises it: `@statelyai/inspect`'s own `sanitizeContext` runs after its converter has
 * already stringified the snapshot, so it can neither save the work nor stop a secret from being copied.
 */
export interface SanitizeOptions {
  /** Strings longer than this are cut, with the number of characters left out (default 400). */
  maxStringLength?: number;
  /** Arrays longer than this keep their first items and say how many were left out (default 20). */
  maxArrayLength?: number;
  /** Objects keep this many keys (default 40). */
  maxKeys?: number;
  /** Deeper values become a short description (default 8). */
  maxDepth?: number;
  /** Values under keys matching this are replaced by "[redacted]" (default: secret names, see `isSecretName`). */
  redactKeys?: RegExp;
  /**
   * More exact strings to scrub wherever they appear. Every secret the process knows is scrubbed whatever this
   * says: the environment's secret variables, the models' keys, MCP configurations' header and environment values.
   */
  secrets?: readonly string[];
  /** Patterns scrubbed inside every string (default: `sk-…` keys and `Bearer …` credentials). */
  redactPatterns?: readonly RegExp[];
  /** Your own summary of a value; return `undefined` to let the default rules apply. */
  summarize?: (value: unknown, path: readonly string[]) => unknown;
  /** Forward `@xstate.microstep` and `@xstate.action` events (default false: Stately's adapters drop them anyway). */
  includeMicrosteps?: boolean;
}

export const REDACTED = '[redacted]';

const DEFAULT_PATTERNS = [/\bsk-[A-Za-z0-9_-]{12,}/g, /\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/g];

interface Resolved {
  maxStringLength: number;
  maxArrayLength: number;
  maxKeys: number;
  maxDepth: number;
  redactKey: (key: string) => boolean;
  secrets: string[];
  patterns: RegExp[];
  summarize: SanitizeOptions['summarize'];
}

function resolve(options: SanitizeOptions): Resolved {
  return {
    maxStringLength: options.maxStringLength ?? 400,
    maxArrayLength: options.maxArrayLength ?? 20,
    maxKeys: options.maxKeys ?? 40,
    maxDepth: options.maxDepth ?? 8,
    redactKey: options.redactKeys ? (key) => (options.redactKeys as RegExp).test(key) : isSecretName,
    secrets: (options.secrets ?? []).filter((s) => s.length > 0),
    patterns: [...(options.redactPatterns ?? DEFAULT_PATTERNS)].map(
      (p) => new RegExp(p.source, p.flags.includes('g') ? p.flags : `${p.flags}g`),
    ),
    summarize: options.summarize,
  };
}

function scrub(text: string, options: Resolved): string {
  let out = text;
  for (const secret of options.secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  // Read at every call: a model resolves an environment key on its first request, after the inspector was made.
  for (const secret of knownSecrets()) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  for (const pattern of options.patterns) out = out.replace(pattern, REDACTED);
  return out;
}

function summarizeValue(value: unknown, options: Resolved, path: string[], seen: WeakSet<object>): unknown {
  if (options.summarize) {
    const custom = options.summarize(value, path);
    if (custom !== undefined) return custom;
  }
  switch (typeof value) {
    case 'string': {
      const text = scrub(value, options);
      if (text.length <= options.maxStringLength) return text;
      return `${text.slice(0, options.maxStringLength)}… (+${text.length - options.maxStringLength} chars)`;
    }
    case 'number':
    case 'boolean':
    case 'undefined':
      return value;
    case 'bigint':
      return value.toString();
    case 'function':
      return `[function ${(value as { name?: string }).name || 'anonymous'}]`;
    case 'symbol':
      return value.toString();
  }
  if (value === null) return null;
  const object = value as object;
  if (seen.has(object)) return '[circular]';
  if (isActorRef(object)) return { xstate$$type: 1, id: object.id };
  if (path.length >= options.maxDepth) return Array.isArray(object) ? `[array(${object.length})]` : '[object]';
  if (object instanceof Date) return object.toISOString();
  if (object instanceof Error) return { name: object.name, message: scrub(object.message, options) };
  if (ArrayBuffer.isView(object) || object instanceof ArrayBuffer) return `[${object.byteLength} bytes]`;
  if (object instanceof Map || object instanceof Set) return `[${object.constructor.name}(${object.size})]`;
  seen.add(object);
  try {
    if (Array.isArray(object)) {
      const limit = options.maxArrayLength;
      const kept = object.slice(0, limit).map((item, i) => summarizeValue(item, options, [...path, String(i)], seen));
      if (object.length > limit) kept.push(`… ${object.length - limit} more`);
      return kept;
    }
    const toJSON = (object as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return summarizeValue(toJSON.call(object), options, path, seen);
    const out: Record<string, unknown> = {};
    const keys = Object.keys(object);
    for (const key of keys.slice(0, options.maxKeys)) {
      const item = (object as Record<string, unknown>)[key];
      out[key] =
        options.redactKey(key) && item != null ? REDACTED : summarizeValue(item, options, [...path, key], seen);
    }
    if (keys.length > options.maxKeys) out['…'] = `${keys.length - options.maxKeys} more keys`;
    return out;
  } finally {
    seen.delete(object);
  }
}

function isActorRef(value: object): value is AnyActorRef {
  return 'sessionId' in value && 'send' in value && typeof (value as { send: unknown }).send === 'function';
}

/** A summarising, redacting copy of any value, bounded in depth, length and breadth. */
export function summarize(value: unknown, options: SanitizeOptions = {}): unknown {
  return summarizeValue(value, resolve(options), [], new WeakSet());
}

interface Sanitizer {
  value(value: unknown): unknown;
  event(event: AnyEventObject): AnyEventObject;
  /** A plain-data snapshot: status, value, summarised context, children by id, error and output. */
  snapshot(snapshot: unknown): Record<string, unknown>;
}

function createSanitizer(options: SanitizeOptions = {}): Sanitizer {
  const resolved = resolve(options);
  const value = (v: unknown) => summarizeValue(v, resolved, [], new WeakSet());
  return {
    value,
    event: (event) => ({ ...(value(event) as object), type: event.type }) as AnyEventObject,
    snapshot: (snapshot) => {
      const s = (snapshot ?? {}) as Record<string, unknown>;
      const out: Record<string, unknown> = { status: s.status };
      if ('value' in s) out.value = s.value;
      if ('context' in s) out.context = value(s.context);
      if ('input' in s) out.input = value(s.input);
      if (s.children && typeof s.children === 'object') {
        out.children = Object.fromEntries(
          Object.entries(s.children as Record<string, AnyActorRef | undefined>)
            .filter((entry): entry is [string, AnyActorRef] => entry[1] !== undefined)
            .map(([id, child]) => [id, { xstate$$type: 1, id: child.id }]),
        );
      }
      if (s.tags instanceof Set) out.tags = [...s.tags];
      if (s.error !== undefined) out.error = value(s.error);
      if (s.output !== undefined) out.output = value(s.output);
      return out;
    },
  };
}

type InspectionObserver = Observer<InspectionEvent> | ((event: InspectionEvent) => void);

/**
 * Wraps an inspection observer (e.g. `createWebSocketInspector(...).inspect`) so that it only ever receives
 * sanitised data: snapshots, events and action parameters are summarised and redacted first, and an
 * `@xstate.actor` event's actor answers `getSnapshot()` with the sanitised snapshot.
 */
export function sanitizeInspection(
  observer: InspectionObserver,
  options: SanitizeOptions = {},
): Observer<InspectionEvent> {
  const sanitizer = createSanitizer(options);
  const next = typeof observer === 'function' ? observer : (event: InspectionEvent) => observer.next?.(event);
  const facades = new WeakMap<object, AnyActorRef>();
  const facade = (actorRef: AnyActorRef): AnyActorRef => {
    let proxy = facades.get(actorRef);
    if (!proxy) {
      proxy = new Proxy(actorRef, {
        get(target, key, receiver) {
          if (key === 'getSnapshot') return () => sanitizer.snapshot(target.getSnapshot());
          const found = Reflect.get(target, key, receiver);
          return typeof found === 'function' ? found.bind(target) : found;
        },
      });
      facades.set(actorRef, proxy);
    }
    return proxy;
  };
  return {
    next(event) {
      const actorRef = facade(event.actorRef as AnyActorRef);
      switch (event.type) {
        case '@xstate.actor':
          next({ ...event, actorRef });
          return;
        case '@xstate.event':
          next({
            ...event,
            actorRef,
            sourceRef: event.sourceRef ? facade(event.sourceRef as AnyActorRef) : undefined,
            event: sanitizer.event(event.event),
          });
          return;
        case '@xstate.snapshot':
        case '@xstate.transition':
        case '@xstate.microstep':
          if (event.type === '@xstate.microstep' && !options.includeMicrosteps) return;
          next({
            ...event,
            actorRef,
            event: sanitizer.event(event.event),
            snapshot: sanitizer.snapshot(event.snapshot) as never,
          });
          return;
        case '@xstate.action':
          if (!options.includeMicrosteps) return;
          next({
            ...event,
            actorRef,
            action: { type: event.action.type, params: sanitizer.value(event.action.params) },
          });
          return;
      }
    },
    error: (error) => (typeof observer === 'function' ? undefined : observer.error?.(error)),
    complete: () => (typeof observer === 'function' ? undefined : observer.complete?.()),
  };
}
