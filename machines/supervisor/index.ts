export * from './batch.js';
export * from './group.js';
export * from './lane.js';
export * from './shared.js';
export * from './supervisor.js';
export * from './task.js';
