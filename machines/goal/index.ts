export { goalMachine } from './chart.js';
export type * from './setup.js';
