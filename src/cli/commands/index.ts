import { bench } from './bench';
import { demo } from './demo';
import { devices } from './devices';
import { pingpong } from './pingpong';

/** A subcommand of `rx-verbs`. */
export interface Command {
  summary: string;
  run(argv: string[]): Promise<number>;
}

/** Every subcommand, by name. */
export const COMMANDS: Record<string, Command> = { devices, demo, pingpong, bench };
