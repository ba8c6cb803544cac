/**
 * Typed command-line options over `node:util` `parseArgs`: each command
 * declares its options once (name, type, alias, help, default) and gets back
 * values of the right types, and `--help` text made from the same table.
 *
 * `parseArgs` knows strings and booleans only; numbers are read as strings
 * and converted here, so `--iters lots` is a usage error, not a `NaN`.
 *
 * The rules of every command's line live here, once: an unknown option, a
 * missing value, a value on a flag, an argument the command does not take
 * and an option of another mode are usage errors with our own one-line
 * message (`parseArgs`' strict mode words them for programmers, over
 * several lines, with a hint about `--` a user of this CLI never needs).
 */
import { parseArgs } from 'node:util';
import { closest } from './suggest';
import { UsageError } from './usage-error';

interface OptionBase {
  /** One-letter alias, without the dash. */
  readonly short?: string;
  /** One line for `--help`. */
  readonly help: string;
  /**
   * The boolean flags (a mode or a role) this option belongs to: given
   * without any of them, it is a usage error, not a silently ignored setting.
   */
  readonly with?: readonly string[];
}

/** One option: a string or number taking a value, or a boolean flag. */
export type OptionDef =
  | (OptionBase & { readonly type: 'string'; readonly default?: string })
  | (OptionBase & { readonly type: 'number'; readonly default?: number })
  | (OptionBase & { readonly type: 'boolean' });

/** A command's options, by long name (without dashes). */
export type OptionDefs = Readonly<Record<string, OptionDef>>;

/** The value an option has after parsing: `undefined` only when it has no default. */
type ValueOf<D extends OptionDef> = D extends { type: 'boolean' }
  ? boolean
  : D extends { type: 'number' }
    ? D extends { default: number } ? number : number | undefined
    : D extends { default: string } ? string : string | undefined;

/** Every option's value, typed from its definition. */
export type OptionValues<Defs extends OptionDefs> = { -readonly [K in keyof Defs]: ValueOf<Defs[K]> };

/** What {@link parseOptions} returns. */
export interface ParsedOptions<Defs extends OptionDefs> {
  /** Every declared option, with its default where it was not given. */
  values: OptionValues<Defs>;
  /** The arguments that are not options, in order (at most as many as the command takes). */
  positionals: string[];
}

/** What a command takes besides its options. */
export interface Operands {
  /** The names of the arguments it takes, in order (none by default): more is a usage error. */
  readonly operands?: readonly string[];
}

/**
 * Parses `argv` against `defs`. Unknown options (with the nearest known one
 * suggested), missing values, values on flags, numbers that are not
 * numbers, more arguments than `operands` names, and an option given
 * without any of the flags its `with` names are {@link UsageError}s with a
 * one-line message, so a typo is never a silently ignored setting.
 */
export function parseOptions<Defs extends OptionDefs>(argv: readonly string[], defs: Defs, { operands = [] }: Operands = {}): ParsedOptions<Defs> {
  const config: Record<string, { type: 'string' | 'boolean'; short?: string }> = {};
  for (const [name, def] of Object.entries(defs)) {
    config[name] = { type: def.type === 'boolean' ? 'boolean' : 'string', ...(def.short ? { short: def.short } : {}) };
  }
  // Not strict: the tokens say what was typed, and the checks below say what is wrong with it.
  const { tokens } = parseArgs({ args: [...argv], options: config, strict: false, allowPositionals: true, tokens: true });
  const raw = new Map<string, string | true>();
  const positionals: string[] = [];
  for (const token of tokens) {
    if (token.kind === 'positional') {
      if (positionals.length === operands.length) throw new UsageError(unexpectedArgument(token.value, operands));
      positionals.push(token.value);
    }
    if (token.kind !== 'option') continue;
    const def = Object.hasOwn(defs, token.name) ? defs[token.name] : undefined;
    if (!def) throw new UsageError(unknownOption(token.rawName, defs));
    if (def.type === 'boolean') {
      if (token.value !== undefined) throw new UsageError(`option ${flagName(token.name, defs)} takes no value`);
      raw.set(token.name, true);
      continue;
    }
    // `--dev --json`: the next option is not the value (write `--dev=--json` to mean it); `-C -1` is a number.
    const value = token.value;
    const isOption = value !== undefined && !token.inlineValue && value.startsWith('-') && !(def.type === 'number' && value.length > 1 && Number.isFinite(Number(value)));
    if (value === undefined || isOption) throw new UsageError(`option ${flagName(token.name, defs)} needs a value`);
    raw.set(token.name, value);
  }
  for (const name of raw.keys()) {
    const modes = defs[name]?.with;
    if (modes && !modes.some((m) => raw.has(m))) {
      throw new UsageError(`${flagName(name, defs)} goes with ${modes.map((m) => flagName(m, defs)).join(' or ')}`);
    }
  }
  const values: Record<string, string | number | boolean | undefined> = {};
  for (const [name, def] of Object.entries(defs)) {
    const given = raw.get(name);
    if (def.type === 'boolean') values[name] = given === true;
    else if (given === undefined) values[name] = def.default;
    else values[name] = def.type === 'number' ? toNumber(name, String(given)) : String(given);
  }
  return { values: values as OptionValues<Defs>, positionals };
}

/** How `--help` and the messages name an option: `-q/--num-qp`, or `--srq` without a letter. */
function flagName(name: string, defs: OptionDefs): string {
  const short = defs[name]?.short;
  return short ? `-${short}/--${name}` : `--${name}`;
}

function unknownOption(rawName: string, defs: OptionDefs): string {
  const near = rawName.startsWith('--') ? closest(rawName.slice(2), Object.keys(defs)) : undefined;
  return `unknown option '${rawName}'${near === undefined ? '' : ` (did you mean --${near}?)`}`;
}

function unexpectedArgument(value: string, operands: readonly string[]): string {
  if (operands.length === 0) return `unexpected argument '${value}' (this command takes options only)`;
  return `unexpected argument '${value}' (this command takes ${operands.length === 1 ? 'one' : operands.length}: ${operands.join(' ')})`;
}

/** The `--help` text: usage line, summary, then one line per option with its default. */
export function helpText(usage: string, summary: string, defs: OptionDefs): string {
  const lines = Object.entries(defs).map(([name, def]) => {
    const names = `${def.short ? `-${def.short}, ` : '    '}--${name}${def.type === 'boolean' ? '' : ` <${def.type}>`}`;
    const dflt = def.type !== 'boolean' && def.default !== undefined ? ` (default ${def.default})` : '';
    return `  ${names.padEnd(28)} ${def.help}${dflt}`;
  });
  return `Usage: ${usage}\n\n${summary}\n\nOptions:\n${lines.join('\n')}\n`;
}

function toNumber(name: string, text: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n)) throw new UsageError(`option --${name} needs a number, got '${text}'`);
  return n;
}
