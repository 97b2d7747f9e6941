export * from './batch/chart.js';
export type * from './batch/types.js';
export * from './chart.js';
export * from './pool/chart.js';
export type * from './pool/setup.js';
export type * from './setup.js';
export * from './shared.js';
export * from './task/chart.js';
export type * from './task/setup.js';
