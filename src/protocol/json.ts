/** A value that survives `JSON.stringify` / `JSON.parse` unchanged. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object: tool arguments, a JSON Schema, structured details. */
export type JsonObject = { [key: string]: JsonValue };

/**
 * A deep copy of `value` that is JSON-safe, and that never throws: what `JSON.parse(JSON.stringify(value))`
 * would give, except that the values JSON refuses are reduced instead. A BigInt becomes its decimal string, a
 * circular reference `"[circular]"`, a getter, `toJSON` or proxy that throws `"[unreadable]"`; functions, symbols and
 * `undefined` are dropped from objects and become `null` in arrays, as JSON does. Used where data leaves the
 * caller's hands for the history (tool `details`) and where the history is handed back (`agent.messages`), so
 * that neither side can change the other's copy.
 */
export function jsonCopy(value: unknown): JsonValue | undefined {
  return copy(value, new Set(), 0);
}

const MAX_DEPTH = 512;

function copy(value: unknown, path: Set<object>, depth: number): JsonValue | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : null;
    case 'bigint':
      return value.toString();
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (value === null) return null;
  const object = value as object;
  if (path.has(object)) return '[circular]';
  if (depth >= MAX_DEPTH) return '[too deep]';
  path.add(object);
  try {
    const toJSON = (object as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return copy(toJSON.call(object), path, depth + 1);
    if (Array.isArray(object)) {
      const out: JsonValue[] = new Array(object.length);
      for (let i = 0; i < object.length; i++) out[i] = copy(object[i], path, depth + 1) ?? null;
      return out;
    }
    const out: { [key: string]: JsonValue } = {};
    for (const key of Object.keys(object)) {
      const item = copy((object as Record<string, unknown>)[key], path, depth + 1);
      if (item !== undefined) out[key] = item;
    }
    return out;
  } catch {
    return '[unreadable]'; // a getter, toJSON or proxy trap threw
  } finally {
    path.delete(object);
  }
}
