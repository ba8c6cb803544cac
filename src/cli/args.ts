/**
 * The option-table shape `rx-verbs bench` (src/cli/commands/bench.ts) was
 * written against, as a face over ./shared/options so the CLI has one
 * parser. Kept only until the bench command moves with its suites
 * (issue 13, item 1); new commands use ./shared/options directly.
 */
import { helpText as optionsHelp, OptionDef, OptionDefs, parseOptions } from './shared/options';

export { UsageError } from './shared/usage-error';

/** One option, in the array form of the bench command. */
export interface OptionSpec {
  /** Long name without dashes. */
  name: string;
  /** One-letter alias. */
  short?: string;
  /** `'flag'` takes no value. */
  type: 'string' | 'number' | 'flag';
  /** Shown in --help. */
  help: string;
  /** The value when the option is not given. */
  default?: string | number | boolean;
}

/** What {@link parseArgs} returns. */
export interface Parsed {
  /** Values by long name; flags not given are `false`. */
  options: Record<string, string | number | boolean | undefined>;
  /** Arguments that are not options. */
  positionals: string[];
}

/** Parses `argv` against `specs` (see ./shared/options for the rules). */
export function parseArgs(argv: readonly string[], specs: readonly OptionSpec[]): Parsed {
  const { values, positionals } = parseOptions(argv, toDefs(specs));
  return { options: values, positionals };
}

/** Formats the options for --help. */
export function helpText(usage: string, summary: string, specs: readonly OptionSpec[]): string {
  return optionsHelp(usage, summary, toDefs(specs));
}

function toDefs(specs: readonly OptionSpec[]): OptionDefs {
  const defs: Record<string, OptionDef> = {};
  for (const s of specs) {
    const base = { short: s.short, help: s.help };
    if (s.type === 'flag') defs[s.name] = { ...base, type: 'boolean' };
    else if (s.type === 'number') defs[s.name] = { ...base, type: 'number', default: s.default as number | undefined };
    else defs[s.name] = { ...base, type: 'string', default: s.default as string | undefined };
  }
  return defs;
}
