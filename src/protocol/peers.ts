import { MissingPeerError } from './errors.js';

/**
 * The SDKs Troupe declares as optional peer dependencies, with the range `npm install` is told to fetch. Each is
 * loaded on the first use of its feature through {@link loadPeer}, so a program that does not use the feature
 * never needs it installed.
 */
const PEERS = {
  '@anthropic-ai/sdk': '1',
  '@modelcontextprotocol/sdk': '1',
  '@opentelemetry/api': '1',
  '@restatedev/restate-sdk': '1',
  '@statelyai/inspect': '0.7',
  'better-sqlite3': '12',
  elkjs: '0.12',
  openai: '6',
} as const;

export type PeerName = keyof typeof PEERS;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/**
 * True when `error` says that `name` itself cannot be found. Node names the missing specifier first in both module
 * systems (`Cannot find package 'x' imported from …`, `Cannot find module 'x'`); a dependency missing inside the
 * peer names that dependency instead, and stays a plain error.
 */
function isMissing(error: unknown, name: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  const message = String((error as { message?: unknown }).message);
  return new RegExp(`^Cannot find (?:package|module) '${escapeRegExp(name)}(?:/[^']*)?'`).test(message);
}

/**
 * Runs `load` (an `import()` or `require()` of the peer `name`, synchronous or not) and turns "that package is
 * not installed" into a {@link MissingPeerError} naming `feature` ("SQLite sessions") and the install line.
 */
export function loadPeer<T>(name: PeerName, feature: string, load: () => T): T {
  const missing = (error: unknown): unknown =>
    isMissing(error, name) ? new MissingPeerError(name, feature, `${name}@${PEERS[name]}`, { cause: error }) : error;
  let loaded: T;
  try {
    loaded = load();
  } catch (error) {
    throw missing(error);
  }
  if (loaded instanceof Promise) {
    return loaded.catch((error: unknown) => {
      throw missing(error);
    }) as T;
  }
  return loaded;
}
