/**
 * Kept only for src/cli/bench, which still imports it from here; it moves
 * out to bench/ (issue 13, item 1). Delete this file then: the CLI's own
 * commands use ./shared/table.
 */
export { formatTable } from './shared/table';
