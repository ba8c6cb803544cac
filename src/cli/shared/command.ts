/** A subcommand of `rx-verbs`: one folder under src/cli, registered in `commands/index.ts`. */
export interface Command {
  /** One line for `rx-verbs --help`. */
  summary: string;
  /** Runs with the arguments after the command's name; resolves with the exit status. */
  run(argv: string[]): Promise<number>;
}
