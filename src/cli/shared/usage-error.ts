/**
 * A mistake in the command line: `main` prints its one-line message and
 * exits with status 2 (as getopt-based tools do), without a stack.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
