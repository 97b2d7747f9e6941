export { ContextEngine, type ContextOptions } from './engine.js';
export { costOf, type ModelInfo, modelInfo, type Prices } from './models.js';
export { MISSING_RESULT, Projection, project } from './projection.js';
