/** Public surface of the decision engine; other modules import from here. */
export * from './adverse-action-reasons.js';
export * from './engine.js';
export * from './engine-documents.js';
export * from './features.js';
export * from './policy.js';
export * from './scorecard.js';
export * from './key-factors.js';
export * from './auto-loan-features.js';
export * from './auto-loan-policy.js';
export * from './auto-loan-engine.js';
export * from './auto-loan-policy-tables.js';
export * from './auto-loan-policy-validation.js';
export * from './policy-tables.js';
export * from './policy-validation.js';
export * from './grade-pricing.js';
