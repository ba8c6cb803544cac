export { CountingCompletion, UINT_MAX } from './counting-completion';
export { Credits, credits } from './credits';
export type { CreditsOptions } from './credits';
