export * from './errors.js';
export * from './events.js';
export * from './json.js';
export * from './messages.js';
export * from './model.js';
export * from './secrets.js';
export * from './supervision.js';
export * from './validate.js';
