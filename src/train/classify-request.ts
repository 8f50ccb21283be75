// Moved to contract/classify-request.ts (the contract layer). This path re-exports it only until
// the files still importing it from here, being edited elsewhere right now, are committed; then it goes.
export * from '../contract/classify-request.js';
