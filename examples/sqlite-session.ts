/**
 * A session kept in SQLite: an agent answers, its session is closed, and a new agent opened on the same session (as
 * a later process would) carries the conversation on. One database file holds every session (WAL mode). Needs the
 * optional `better-sqlite3` package; `sessions({ dir })` keeps JSON Lines files instead and needs nothing.
 *
 *   npx tsx examples/sqlite-session.ts [file.db]
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAgent, type ModelRequest, SqliteStore, scriptedModel, sessions, textOf } from '../src/index.js';

const file = process.argv[2] ?? join(mkdtempSync(join(tmpdir(), 'troupe-sqlite-')), 'sessions.db');
// The model answers from the whole conversation it is sent, so the second answer shows what was kept.
const model = scriptedModel((request: ModelRequest) => {
  const asked = request.messages.filter((m) => m.role === 'user').map((m) => textOf(m));
  return { text: asked.length === 1 ? 'Noted.' : `Earlier you said: "${asked[0]}"` };
});
const manager = sessions({ store: new SqliteStore(file) });

const session = manager.create({ title: 'a name to remember' });
const first = createAgent({ model, session });
console.log(`first process: ${(await first.prompt('My name is Ada.')).text}`);
await first.stop();
session.close();

const reopened = manager.open(session.id);
const again = createAgent({ model, session: reopened });
console.log(`reopened with ${again.messages.length} messages: ${(await again.prompt('What is my name?')).text}`);
await again.stop();
reopened.close();
console.log(manager.list().map((info) => `${info.title}: ${info.status}`));
