export {
  type Durability,
  type JournalStats,
  JournalWriter,
  readJournal,
  summarize,
  summaryOf,
  type Urgency,
  type WarningHandler,
} from './journal.js';
export { JsonlStore } from './jsonl-store.js';
export { cutAt, momentAt, type TreeMoment } from './moment.js';
export { decodeRecord } from './record-schema.js';
export * from './records.js';
export { SqliteStore } from './sqlite-store.js';
export { SessionLockedError, SessionStorageError, type Store, type StoreWriter } from './store.js';
export { SessionSummary, type SummaryState } from './summary.js';
